use pronto_packet::{Batch, Pool, BATCH_MAX, DEFAULT_HEADROOM, SLOT_STRIDE};

#[test]
fn stride_is_cache_friendly() {
    assert_eq!(SLOT_STRIDE % 64, 0);
    assert_ne!(SLOT_STRIDE % 4096, 0);
    assert_eq!(SLOT_STRIDE, 2176);
}

#[test]
fn alloc_free_returns_slots() {
    let pool = Pool::new(4).expect("pool");
    let a = pool.alloc().expect("a");
    let b = pool.alloc().expect("b");
    assert_eq!(pool.available(), 2);
    assert_eq!((a.slot_index(), b.slot_index()), (0, 1));
    drop(a);
    assert_eq!(pool.available(), 3);
    let c = pool.alloc().expect("c");
    assert_eq!(c.slot_index(), 0);
    drop((b, c));
    assert_eq!(pool.available(), 4);
}

#[test]
fn exhaustion_is_none_not_panic() {
    let pool = Pool::new(2).expect("pool");
    let _a = pool.alloc().expect("a");
    let _b = pool.alloc().expect("b");
    assert!(pool.alloc().is_none());
}

#[test]
fn push_pull_put_take() {
    let pool = Pool::new(1).expect("pool");
    let mut p = pool.alloc_from(&[1, 2, 3, 4, 5, 6]).expect("p");
    assert_eq!(p.headroom(), DEFAULT_HEADROOM);
    p.pull(2);
    assert_eq!(p.data(), &[3, 4, 5, 6]);
    // Unstrip restores the bytes that were there.
    p.push(2).expect("headroom");
    assert_eq!(p.data(), &[1, 2, 3, 4, 5, 6]);
    p.take(3);
    assert_eq!(p.data(), &[1, 2, 3]);
    assert!(p.put_zeroed(2));
    assert_eq!(p.data(), &[1, 2, 3, 0, 0]);
    p.pull(100);
    assert!(p.is_empty());
}

#[test]
fn push_beyond_headroom_moves_data_and_headers() {
    let pool = Pool::new(1).expect("pool");
    let mut p = pool.alloc_from(&[9; 10]).expect("p");
    p.set_network_header(2, 4);
    let h = p.push(DEFAULT_HEADROOM + 8).expect("fits in slot");
    h.fill(0xaa);
    assert_eq!(p.len(), 10 + DEFAULT_HEADROOM + 8);
    assert_eq!(
        p.network_header_offset(),
        Some((DEFAULT_HEADROOM + 8 + 2) as isize)
    );
    assert_eq!(&p.data()[DEFAULT_HEADROOM + 8..], &[9; 10]);
}

#[test]
fn network_header_survives_strip() {
    let pool = Pool::new(1).expect("pool");
    let mut p = pool.alloc_from(&[0; 60]).expect("p");
    p.pull(14);
    p.set_network_header(0, 20);
    assert_eq!(p.network_header_len(), Some(20));
    p.push(14).expect("unstrip");
    assert_eq!(p.network_header_offset(), Some(14));
    assert_eq!(p.transport_header_offset(), Some(34));
}

#[test]
fn clone_copies_bytes_and_annotations() {
    let pool = Pool::new(2).expect("pool");
    let mut p = pool.alloc_from(b"hello").expect("p");
    p.set_paint_anno(7);
    p.set_dst_ip_anno([10, 0, 0, 1]);
    p.set_timestamp_ns(42);
    let q = pool.clone_packet(&p).expect("q");
    assert_eq!(q.data(), b"hello");
    assert_eq!(q.paint_anno(), 7);
    assert_eq!(q.dst_ip_anno(), [10, 0, 0, 1]);
    assert_eq!(q.timestamp_ns(), 42);
    assert_ne!(p.slot_index(), q.slot_index());
}

#[test]
fn batch_retain_and_drain() {
    let pool = Pool::new(BATCH_MAX + 1).expect("pool");
    let mut b = Batch::new();
    for i in 0..BATCH_MAX {
        b.push(pool.alloc_from(&[i as u8]).expect("p"))
            .expect("room");
    }
    assert!(b.is_full());
    let extra = pool.alloc().expect("extra");
    assert!(b.push(extra).is_err());
    let mut odd = Batch::new();
    b.retain_or(|p| p.data()[0] % 2 == 0, |p| odd.push(p).expect("room"));
    assert_eq!(b.len(), BATCH_MAX / 2);
    assert_eq!(odd.len(), BATCH_MAX / 2);
    assert!(b.iter().all(|p| p.data()[0] % 2 == 0));
    let firsts: Vec<u8> = odd.drain().take(2).map(|p| p.data()[0]).collect();
    assert_eq!(firsts, vec![1, 3]);
    assert!(odd.is_empty());
    drop(b);
    assert_eq!(pool.available(), BATCH_MAX + 1);
}

#[test]
fn batch_append_moves_what_fits() {
    let pool = Pool::new(BATCH_MAX + 10).expect("pool");
    let mut a = Batch::new();
    let mut b = Batch::new();
    for _ in 0..BATCH_MAX - 5 {
        a.push(pool.alloc().expect("p")).expect("room");
    }
    for i in 0..10u8 {
        b.push(pool.alloc_from(&[i]).expect("p")).expect("room");
    }
    assert_eq!(a.append(&mut b), 5);
    assert_eq!(b.len(), 5);
    assert_eq!(b.as_slice()[0].data(), &[5]);
}

#[test]
fn alloc_frame_sets_length_timestamp_and_link_header() {
    let pool = Pool::new(2).expect("pool");
    let mut old = pool.alloc_from(&[7; 40]).expect("p");
    old.set_paint_anno(9);
    old.set_network_header(14, 20);
    drop(old);
    let p = pool
        .alloc_frame(
            &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17],
            5,
        )
        .expect("frame");
    assert_eq!(
        p.data(),
        &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17]
    );
    assert_eq!(p.timestamp_ns(), 5);
    assert_eq!(p.mac_header_offset(), Some(0));
    assert_eq!(p.network_header_offset(), None);
    assert_eq!(
        p.paint_anno(),
        0,
        "annotations of the slot's last packet are cleared"
    );
    assert!(pool
        .alloc_frame(&vec![0; pronto_packet::MAX_PACKET + 1], 0)
        .is_none());
}

#[test]
fn alloc_frame_with_is_alloc_frame_filled_by_the_caller() {
    let pool = Pool::new(1).expect("pool");
    let mut old = pool.alloc_from(&[7; 40]).expect("p");
    old.set_paint_anno(9);
    old.set_network_header(14, 20);
    drop(old);
    let p = pool
        .alloc_frame_with(17, 5, |d| {
            assert_eq!(d.len(), 17);
            for (i, b) in d.iter_mut().enumerate() {
                *b = i as u8 + 1;
            }
        })
        .expect("frame");
    let want: Vec<u8> = (1..=17).collect();
    assert_eq!(p.data(), &want[..]);
    assert_eq!(p.timestamp_ns(), 5);
    assert_eq!(p.mac_header_offset(), Some(0));
    assert_eq!(p.network_header_offset(), None);
    assert_eq!(p.paint_anno(), 0);
    // Too long, or the pool exhausted: no packet, and nothing filled.
    let mut called = false;
    assert!(pool
        .alloc_frame_with(pronto_packet::MAX_PACKET + 1, 0, |_| called = true)
        .is_none());
    assert!(pool.alloc_frame_with(1, 0, |_| called = true).is_none());
    assert!(!called);
}

#[test]
fn small_copies_of_every_length_are_exact() {
    let pool = Pool::new(1).expect("pool");
    let src: Vec<u8> = (0..=255u8).collect();
    for n in 0..=200 {
        let p = pool.alloc_from(&src[..n]).expect("p");
        assert_eq!(p.data(), &src[..n], "length {n}");
    }
}

#[test]
fn route_keeps_the_first_packets_port_in_place() {
    let pool = Pool::new(16).expect("pool");
    let mut b = Batch::new();
    for i in 0..6u8 {
        b.push(pool.alloc_from(&[i]).expect("p")).expect("room");
    }
    // Ports by first byte: 0,1 -> 2; 2 -> dropped; 3,4,5 -> 0.
    let mut elsewhere = Vec::new();
    let kept = b.route(
        |p| match p.data()[0] {
            0 | 1 => Some(2),
            2 => None,
            _ => Some(0),
        },
        |port, p| elsewhere.push((port, p.data()[0])),
    );
    assert_eq!(kept, Some(2));
    assert_eq!(
        b.iter().map(|p| p.data()[0]).collect::<Vec<_>>(),
        vec![0, 1]
    );
    assert_eq!(elsewhere, vec![(0, 3), (0, 4), (0, 5)]);
    drop(b);
    assert_eq!(
        pool.available(),
        16,
        "the dropped packet and the routed ones are all freed"
    );
    let mut empty = Batch::new();
    assert_eq!(empty.route(|_| Some(1), |_, _| {}), None);
}

#[test]
fn adopt_moves_a_packet_into_another_pool_and_frees_the_original() {
    let old = Pool::new(4).expect("pool");
    let new = Pool::new(2).expect("pool");
    let mut p = old.alloc_from(&[1, 2, 3, 4]).expect("alloc");
    p.set_paint_anno(7);
    p.pull(1);
    assert!(old.owns(&p) && !new.owns(&p));
    let q = new.adopt(p).expect("room in the new pool");
    assert!(new.owns(&q));
    assert_eq!(q.data(), &[2, 3, 4]);
    assert_eq!(q.paint_anno(), 7);
    assert_eq!(old.available(), 4, "the original went back to its pool");
    assert_eq!(new.available(), 1);
    // A packet of the pool itself is kept as it is.
    let r = new.adopt(q).expect("same pool");
    assert_eq!(new.available(), 1);
    // No room: the packet is freed into its own pool, and None comes back.
    let _s = new.alloc().expect("last slot");
    let t = old.alloc_from(&[9]).expect("alloc");
    assert!(new.adopt(t).is_none());
    assert_eq!(old.available(), 4);
    drop(r);
}

#[test]
fn a_growable_pool_grows_to_its_limit_and_counts_what_it_refuses() {
    let pool = Pool::growable(4, 200).expect("pool");
    assert_eq!((pool.capacity(), pool.limit()), (4, 200));
    let mut held = Vec::new();
    for i in 0..200u32 {
        let mut p = pool.alloc_from(&i.to_be_bytes()).expect("within the limit");
        assert_eq!(p.slot_index(), i);
        p.data_mut()[0] = 0xAA;
        held.push(p);
    }
    // The pool grew in steps (4 -> 68 -> 136 -> 200) and stops at its limit.
    assert_eq!(pool.capacity(), 200);
    assert!(pool.alloc().is_none());
    assert!(pool.alloc_from(&[1]).is_none());
    assert_eq!(pool.refused(), 2);
    let c = pool.counters();
    assert_eq!((c.in_use, c.refused), (200, 2));
    // Growing never moved a packet: the first ones still hold their bytes.
    assert_eq!(held[0].data(), &[0xAA, 0, 0, 0]);
    assert_eq!(held[199].data(), &[0xAA, 0, 0, 199]);
    held.truncate(10);
    assert_eq!(pool.counters().in_use, 10);
    assert_eq!(pool.available(), 190);
    // Freed slots are used again before the pool would grow.
    assert!(pool.alloc().is_some());
    assert_eq!(pool.refused(), 2);
}

#[test]
fn a_fixed_pool_never_grows() {
    let pool = Pool::new(2).expect("pool");
    let _a = pool.alloc().expect("a");
    let _b = pool.alloc().expect("b");
    assert!(pool.alloc().is_none());
    assert_eq!((pool.capacity(), pool.limit(), pool.refused()), (2, 2, 1));
}

#[test]
fn a_pool_limit_beyond_u32_slots_is_refused() {
    assert!(Pool::growable(1, u32::MAX as usize + 1).is_err());
    assert!(Pool::growable(0, 10).is_err());
}

#[test]
fn allocations_and_frees_are_charged_to_the_owner_of_the_moment() {
    let pool = Pool::new(8).expect("pool");
    pool.set_accounts(3);
    assert_eq!(pool.set_owner(1), 2, "the last account is charged at first");
    let a = pool.alloc().expect("a");
    let b = pool.alloc().expect("b");
    assert_eq!(pool.set_owner(0), 1);
    drop(a);
    let mut batch = Batch::new();
    for _ in 0..3 {
        let _ = batch.push(pool.alloc().expect("c"));
    }
    let _ = batch.push(b);
    pool.set_owner(2);
    batch.clear();
    // Out of range: the last account.
    assert_eq!(pool.set_owner(99), 2);
    drop(pool.alloc());
    assert_eq!(pool.set_owner(0), 99);
    let acct = |i| {
        let a = pool.account(i);
        (a.freed, a.refused)
    };
    assert_eq!(acct(1), (0, 0));
    assert_eq!(acct(0), (1, 0));
    assert_eq!(acct(2), (5, 0));
    assert_eq!(pool.account(7), Default::default());
    assert_eq!(pool.in_use(), 0);
}

#[test]
fn mac_header_data_survives_a_pull() {
    let pool = Pool::new(4).expect("pool");
    let mut p = pool.alloc().expect("slot");
    let frame: Vec<u8> = (0u8..30).collect();
    p.put_uninit(frame.len()).copy_from_slice(&frame);
    assert_eq!(p.mac_header_data(), None, "no link header marked");
    p.set_mac_header(0);
    p.pull(14);
    assert_eq!(p.mac_header_data(), Some(&frame[..]));
    p.set_mac_header(4);
    assert_eq!(p.mac_header_data(), Some(&frame[18..]));
}

#[test]
fn alloc_copies_fills_a_batch_as_alloc_from_would() {
    let pool = Pool::new(8).expect("pool");
    let mut batch = Batch::new();
    assert_eq!(pool.alloc_copies(b"abc", 3, 77, &mut batch), 3);
    // The same slots, in the same order, as three `alloc` calls.
    let got: Vec<_> = batch
        .iter()
        .map(|p| {
            (
                p.slot_index(),
                p.data().to_vec(),
                p.timestamp_ns(),
                p.headroom(),
            )
        })
        .collect();
    let abc = b"abc".to_vec();
    assert_eq!(
        got,
        vec![
            (0, abc.clone(), 77, DEFAULT_HEADROOM),
            (1, abc.clone(), 77, DEFAULT_HEADROOM),
            (2, abc, 77, DEFAULT_HEADROOM)
        ]
    );
    assert!(batch.iter().all(|p| p.network_header_offset().is_none()));
    assert_eq!(pool.available(), 5);
    // More than the pool holds: what it has, and the refusal is counted.
    assert_eq!(pool.alloc_copies(&[9; 100], 10, 0, &mut batch), 5);
    assert_eq!(batch.len(), 8);
    assert_eq!(batch.as_slice()[7].data(), &[9; 100][..]);
    assert_eq!(batch.as_slice()[7].timestamp_ns(), 0);
    assert_eq!(pool.refused(), 1);
    batch.clear();
    assert_eq!(pool.available(), 8);
}

#[test]
fn alloc_copies_stops_at_the_batch_room_and_a_growable_pool_grows() {
    let pool = Pool::growable(4, 1000).expect("pool");
    let mut batch = Batch::new();
    assert_eq!(pool.alloc_copies(&[1, 2], 300, 5, &mut batch), BATCH_MAX);
    assert_eq!(pool.in_use(), BATCH_MAX);
    assert_eq!(pool.alloc_copies(&[1, 2], 1, 5, &mut batch), 0);
    assert_eq!(pool.refused(), 0);
    batch.clear();
    assert_eq!(pool.in_use(), 0);
}

#[test]
fn clear_returns_runs_from_several_pools_to_each_pool() {
    let a = Pool::new(100).expect("a");
    let b = Pool::new(100).expect("b");
    a.set_accounts(1);
    b.set_accounts(1);
    let mut batch = Batch::new();
    // Runs longer than 32, short runs, and alternation.
    let plan = [(0, 40), (1, 1), (0, 1), (1, 33), (0, 2), (1, 64), (0, 31)];
    for &(which, n) in &plan {
        let pool = if which == 0 { &a } else { &b };
        assert_eq!(pool.alloc_copies(&[which as u8], n, 0, &mut batch), n);
    }
    assert_eq!((a.in_use(), b.in_use()), (74, 98));
    batch.clear();
    assert!(batch.is_empty());
    assert_eq!((a.in_use(), b.in_use()), (0, 0));
    assert_eq!((a.account(0).freed, b.account(0).freed), (74, 98));
}
