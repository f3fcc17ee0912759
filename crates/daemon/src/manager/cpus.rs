//! The CPUs an instance may be pinned to (`cpus`): among those the daemon
//! itself may run on.

use crate::failure::Failure;

/// The CPUs this process may run on.
pub fn daemon_cpus() -> Result<Vec<usize>, Failure> {
    let allowed = rustix::thread::sched_getaffinity(None)
        .map_err(|e| Failure::Internal(format!("reading the daemon's CPUs: {e}")))?;
    Ok((0..rustix::thread::CpuSet::MAX_CPU)
        .filter(|&c| allowed.is_set(c))
        .collect())
}

/// Checks an instance's CPU list against `mine`, the CPUs this daemon may
/// run on (and sorts it, without repeats).
pub fn check_cpus(cpus: &mut Vec<usize>, mine: &[usize]) -> Result<(), Failure> {
    cpus.sort_unstable();
    cpus.dedup();
    if cpus.is_empty() {
        return Err(Failure::BadRequest(
            "cpus: an empty list; leave it out to run on any CPU".into(),
            Some("cpus"),
        ));
    }
    if let Some(c) = cpus.iter().find(|c| !mine.contains(c)) {
        return Err(Failure::BadRequest(
            format!(
                "cpus: CPU {c} is not one this daemon runs on ({})",
                cpu_list(mine)
            ),
            Some("cpus"),
        ));
    }
    Ok(())
}

/// `0-3,6`: a CPU list as Linux writes it.
pub fn cpu_list(cpus: &[usize]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        out.push(if j == i {
            cpus[i].to_string()
        } else {
            format!("{}-{}", cpus[i], cpus[j])
        });
        i = j + 1;
    }
    out.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_are_written_as_linux_writes_them() {
        assert_eq!(cpu_list(&[0, 1, 2, 3, 6, 8, 9]), "0-3,6,8-9");
        assert_eq!(cpu_list(&[5]), "5");
        assert_eq!(cpu_list(&[]), "");
    }

    #[test]
    fn cpus_must_be_the_daemons() {
        let mine = [0, 1, 2, 3];
        let mut v = vec![3, 1, 1];
        check_cpus(&mut v, &mine).expect("good");
        assert_eq!(v, [1, 3]);
        assert_eq!(
            check_cpus(&mut vec![4095], &mine),
            Err(Failure::BadRequest(
                "cpus: CPU 4095 is not one this daemon runs on (0-3)".into(),
                Some("cpus")
            ))
        );
        assert!(check_cpus(&mut Vec::new(), &mine).is_err());
        assert!(!daemon_cpus().expect("affinity").is_empty());
    }
}
