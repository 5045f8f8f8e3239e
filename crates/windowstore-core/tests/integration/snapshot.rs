//! Snapshots: round trip, and every kind of damage refused whole with a reason.
#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use std::collections::HashMap;
use std::fs;

use windowstore_core::store::snapshot_format::{self, HEADER_LEN};
use windowstore_core::{Error, SessionStore};

use crate::common;

fn sample() -> SessionStore {
    let mut s = SessionStore::new(100, Some(10)).unwrap();
    for i in 0..200i64 {
        let key = format!("user-{}", i % 17);
        s.put(key.as_bytes(), i * 3, i * 3 + i % 5, &i.to_le_bytes())
            .unwrap();
    }
    s.remove(b"user-3", 3 * 3, 3 * 3 + 3);
    s.put(b"late", 0, 0, b"expired").unwrap();
    s
}

fn reason(err: Error) -> String {
    match err {
        Error::Snapshot { reason, .. } => reason,
        other => panic!("expected a snapshot error, got {other:?}"),
    }
}

#[test]
fn round_trip_keeps_sessions_store_time_and_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.snap");
    let store = sample();
    store.snapshot(&path).unwrap();
    let back = SessionStore::restore(&path).unwrap();
    let rows = |s: &SessionStore| common::rows(&s.entries());
    assert!(!rows(&store).is_empty());
    assert_eq!(rows(&back), rows(&store));
    assert_eq!(back.store_time(), store.store_time());
    assert_eq!(back.retention(), 100);
    assert_eq!(back.segment_interval(), 10);
    let (m, b) = (store.metrics(), back.metrics());
    assert_eq!(
        (b.puts, b.removes, b.expired_puts, b.expired_sessions),
        (m.puts, m.removes, m.expired_puts, m.expired_sessions)
    );
    assert_eq!(m.expired_puts, 1);
    assert_eq!(b.live_sessions as usize, rows(&store).len());
    // Restored stores keep working: expiry continues from the restored store time.
    let mut back = back;
    back.put(b"x", 5000, 5000, b"").unwrap();
    assert_eq!(back.entries().len(), 1);
}

/// Sessions that expired in a segment still held for its live ones are left out of a snapshot
/// and counted as expired: the restored store and the store it came from then write the same
/// bytes, before and after that segment goes.
#[test]
fn a_restored_store_writes_what_its_original_writes() {
    let mut store = SessionStore::new(100, Some(50)).unwrap();
    store.put(b"a", 0, 110, b"expires").unwrap();
    store.put(b"b", 140, 140, b"live").unwrap();
    store.put(b"c", 215, 215, b"now").unwrap();
    // Store time 215: the live ends are >= 116, so [0, 110] has expired, while its segment
    // (ends 100 to 149) stays for [140, 140].
    assert_eq!(store.metrics().expired_sessions, 0);
    let extra = HashMap::new();
    let bytes = snapshot_format::encode(&store, &extra).unwrap();
    let (mut back, _) = snapshot_format::decode(std::path::Path::new("mem"), &bytes).unwrap();
    assert_eq!(back.metrics().expired_sessions, 1);
    assert_eq!(snapshot_format::encode(&back, &extra).unwrap(), bytes);
    for s in [&mut store, &mut back] {
        s.put(b"d", 260, 260, b"later").unwrap();
    }
    assert_eq!(store.metrics().expired_sessions, 2);
    assert_eq!(back.metrics().expired_sessions, 2);
    assert_eq!(
        snapshot_format::encode(&back, &extra).unwrap(),
        snapshot_format::encode(&store, &extra).unwrap()
    );
}

#[test]
fn extra_metadata_round_trips_and_payload_is_plain_arrow_ipc() {
    let store = sample();
    let extra = HashMap::from([(
        "windowstore.processor.stream_time".to_string(),
        "42".to_string(),
    )]);
    let bytes = snapshot_format::encode(&store, &extra).unwrap();
    let (_, got) = snapshot_format::decode("mem".as_ref(), &bytes).unwrap();
    assert_eq!(got, extra);
    let ipc = zstd::stream::decode_all(&bytes[HEADER_LEN..]).unwrap();
    let reader = arrow_ipc::reader::StreamReader::try_new(ipc.as_slice(), None).unwrap();
    let rows: usize = reader.map(|b| b.unwrap().num_rows()).sum();
    assert_eq!(rows, store.entries().len());
}

#[test]
fn truncated_at_every_tenth_is_refused() {
    let bytes = snapshot_format::encode(&sample(), &HashMap::new()).unwrap();
    for tenth in 0..10 {
        let cut = bytes.len() * tenth / 10;
        let why = reason(snapshot_format::decode("t".as_ref(), &bytes[..cut]).unwrap_err());
        assert!(why.contains("truncated"), "cut at {cut}: {why}");
    }
}

#[test]
fn every_flipped_byte_is_refused() {
    let mut s = SessionStore::new(100, None).unwrap();
    s.put(b"k", 1, 2, b"v").unwrap();
    let bytes = snapshot_format::encode(&s, &HashMap::new()).unwrap();
    for i in 0..bytes.len() {
        let mut damaged = bytes.clone();
        damaged[i] ^= 0x40;
        let why = reason(snapshot_format::decode("f".as_ref(), &damaged).unwrap_err());
        assert!(!why.is_empty(), "byte {i}");
    }
    let mut damaged = bytes.clone();
    damaged[HEADER_LEN + 7] ^= 1;
    let why = reason(snapshot_format::decode("f".as_ref(), &damaged).unwrap_err());
    assert!(why.contains("checksum mismatch"), "{why}");
}

#[test]
fn trailing_bytes_and_foreign_files_are_refused() {
    let mut bytes = snapshot_format::encode(&sample(), &HashMap::new()).unwrap();
    bytes.push(0);
    assert!(
        reason(snapshot_format::decode("x".as_ref(), &bytes).unwrap_err()).contains("trailing")
    );
    let why =
        reason(snapshot_format::decode("x".as_ref(), b"PAR1 this is not a snapshot").unwrap_err());
    assert!(why.contains("not a windowstore snapshot"), "{why}");
    let dir = tempfile::tempdir().unwrap();
    let why = reason(SessionStore::restore(dir.path().join("missing")).unwrap_err());
    assert!(why.contains("cannot read"), "{why}");
}

#[test]
fn crash_between_temp_write_and_rename_leaves_old_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.snap");
    let mut store = SessionStore::new(1000, None).unwrap();
    store.put(b"k", 0, 1, b"old").unwrap();
    store.snapshot(&path).unwrap();
    store.put(b"k", 0, 1, b"new").unwrap();
    // The writer dies after staging and before the rename.
    let bytes = snapshot_format::encode(&store, &HashMap::new()).unwrap();
    let staged = snapshot_format::stage(&path, &bytes).unwrap();
    assert!(staged.exists());
    let back = SessionStore::restore(&path).unwrap();
    assert_eq!(back.fetch_session(b"k", 0, 1), Some(&b"old"[..]));
    // The next snapshot replaces the old one; a leftover temp file is harmless.
    store.snapshot(&path).unwrap();
    let back = SessionStore::restore(&path).unwrap();
    assert_eq!(back.fetch_session(b"k", 0, 1), Some(&b"new"[..]));
    let _ = fs::remove_file(staged);
}

/// A temporary file as a writer `pid` killed mid-write leaves it, last modified `age` ago.
#[cfg(target_os = "linux")]
fn leave_temp(dir: &std::path::Path, name: &str, age: std::time::Duration) -> std::path::PathBuf {
    let path = dir.join(name);
    fs::write(&path, b"half a snapshot").unwrap();
    let file = fs::File::options().write(true).open(&path).unwrap();
    file.set_modified(std::time::SystemTime::now() - age)
        .unwrap();
    path
}

#[test]
#[cfg(target_os = "linux")] // process liveness is read from /proc
fn a_write_removes_the_stale_temp_files_of_its_target_and_keeps_live_ones() {
    use std::time::Duration;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.snap");
    // A process that has exited: its id is not running (as a killed writer's).
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let me = std::process::id();
    let old = Duration::from_secs(120);
    let killed = leave_temp(dir.path(), &format!(".store.snap.tmp-{dead}-0"), old);
    // Left by an earlier process with this process's id (ids are reused).
    let reused = leave_temp(
        dir.path(),
        &format!(".store.snap.tmp-{me}-{}", u64::MAX),
        old,
    );
    // Kept: a dead writer's file modified moments ago (its id may mean nothing here), a running
    // process's (pid 1), another target's, and a name not of the temporary form.
    let fresh = leave_temp(
        dir.path(),
        &format!(".store.snap.tmp-{dead}-1"),
        Duration::ZERO,
    );
    let running = leave_temp(dir.path(), ".store.snap.tmp-1-0", old);
    let other = leave_temp(dir.path(), &format!(".other.snap.tmp-{dead}-0"), old);
    let odd = leave_temp(dir.path(), &format!(".store.snap.tmp-{dead}-x"), old);
    // Kept: a write of the same target in flight in this process (another thread's, say).
    let mut store = SessionStore::new(1000, None).unwrap();
    store.put(b"k", 0, 1, b"in flight").unwrap();
    let in_flight = snapshot_format::stage(
        &path,
        &snapshot_format::encode(&store, &HashMap::new()).unwrap(),
    )
    .unwrap();

    store.put(b"k", 0, 1, b"written").unwrap();
    store.snapshot(&path).unwrap();
    assert!(!killed.exists(), "a killed writer's temp file is removed");
    assert!(
        !reused.exists(),
        "a temp file of this pid not in flight is removed"
    );
    for kept in [&fresh, &running, &other, &odd, &in_flight] {
        assert!(kept.exists(), "{} must be kept", kept.display());
    }
    let back = SessionStore::restore(&path).unwrap();
    assert_eq!(back.fetch_session(b"k", 0, 1), Some(&b"written"[..]));
    // The write in flight completes normally.
    snapshot_format::commit(&in_flight, &path).unwrap();
    let back = SessionStore::restore(&path).unwrap();
    assert_eq!(back.fetch_session(b"k", 0, 1), Some(&b"in flight"[..]));
    // Once committed it is no longer in flight: nothing of this process is left over.
    store.snapshot(&path).unwrap();
    let mut left: Vec<String> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    let mut expected = vec![
        "store.snap".to_string(),
        format!(".store.snap.tmp-{dead}-1"),
        ".store.snap.tmp-1-0".to_string(),
        format!(".other.snap.tmp-{dead}-0"),
        format!(".store.snap.tmp-{dead}-x"),
    ];
    expected.sort();
    assert_eq!(left, expected);
}

#[test]
fn empty_store_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("empty.snap");
    SessionStore::new(5, None).unwrap().snapshot(&path).unwrap();
    let back = SessionStore::restore(&path).unwrap();
    assert_eq!(back.store_time(), None);
    assert_eq!(back.entries().len(), 0);
}

proptest::proptest! {
    #![proptest_config(crate::common::cases(500))]

    /// `entries` (what a snapshot writes) is every live session, by key bytes, then end, then
    /// start: the same as a range scan over all keys, and as sorting what it returns.
    #[test]
    fn entries_are_every_live_session_by_key_end_start(
        puts in proptest::collection::vec(
            (
                proptest::collection::vec(proptest::sample::select(vec![0u8, 1, 255]), 0..20),
                0i64..300,
                0i64..40,
            ),
            0..120,
        ),
        retention in 1i64..200,
        interval in proptest::option::of(1i64..50),
    ) {
        let mut store = SessionStore::new(retention, interval).unwrap();
        for (key, end, len) in &puts {
            store.put(key, end - len, *end, &end.to_le_bytes()).unwrap();
        }
        let entries = common::rows(&store.entries());
        let mut sorted = entries.clone();
        sorted.sort_by(|a, b| (&a.0, a.2, a.1).cmp(&(&b.0, b.2, b.1)));
        proptest::prop_assert_eq!(&entries, &sorted);
        let scanned = common::rows(&store.fetch_range(&[], &[255; 64]));
        proptest::prop_assert_eq!(entries, scanned);
    }
}
