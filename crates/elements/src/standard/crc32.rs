//! Click's CRC-32 (`update_crc`): polynomial 0x04c11db7, most significant
//! bit first, starting from all ones, no final inversion (the variant
//! known as CRC-32/MPEG-2). Shared by `SetCRC32` and `CheckCRC32`.

/// The table of remainders for each byte value.
const TABLE: [u32; 256] = {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = (i as u32) << 24;
        let mut j = 0;
        while j < 8 {
            c = if c & 0x8000_0000 != 0 {
                (c << 1) ^ 0x04c1_1db7
            } else {
                c << 1
            };
            j += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
};

/// The CRC of `data`, as Click computes it for these elements.
pub fn crc32(data: &[u8]) -> u32 {
    data.iter().fold(0xffff_ffff, |crc, &b| {
        (crc << 8) ^ TABLE[(((crc >> 24) as u8) ^ b) as usize]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_standard_check_value() {
        // CRC-32/MPEG-2's published check value for "123456789".
        assert_eq!(crc32(b"123456789"), 0x0376_e6e7);
        assert_eq!(crc32(b""), 0xffff_ffff);
    }
}
