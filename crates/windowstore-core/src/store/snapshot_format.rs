//! Snapshots: a store written to one file and read back whole, or refused.
//!
//! The one layout of every windowstore state (a store, a processor of any kind and options,
//! Spark's state rows): a 20-byte header, then an Arrow IPC stream compressed whole with zstd.
//!
//! | bytes  | content                                                        |
//! |--------|----------------------------------------------------------------|
//! | 0..8   | magic `WSSNAP\0\x02` (layout version 2)                        |
//! | 8..16  | payload length, u64 little-endian                              |
//! | 16..20 | CRC-32 of the payload, u32 little-endian                       |
//! | 20..   | a zstd frame of Arrow IPC streams: the sessions (`key`, `start`, `end`, `value`), then the caller's tables |
//!
//! The first stream's schema metadata carries retention, segment interval, store time, the
//! store's counters, the names of the tables that follow (`windowstore.tables`) and whatever
//! the caller adds (processors keep their own state there), so the compression covers it too.
//! Each table the caller adds (a processor's held rows and rejected rows) is an IPC stream of
//! its own after the first, in the order named. Python reads the sessions with
//! `pyarrow.ipc.open_stream(zstandard.decompress(data[20:]))`. Bytes of an older layout
//! (version 1, or the wrappers earlier Python code put around it) are refused, saying so.
//!
//! Writes are atomic ([`super::atomic_file`]): a temporary file beside the target, fsync,
//! rename, fsync of the folder; killed writers' temporary files are cleaned up. A
//! restore checks length and checksum before parsing and validates every row before it returns
//! a store, so a damaged file is refused and never half-loaded.

use std::collections::HashMap;
use std::fs;
use std::path::Path;
use std::sync::Arc;

use arrow_array::builder::{Int64Builder, LargeBinaryBuilder};
use arrow_array::{Array, ArrayRef, Int64Array, LargeBinaryArray, RecordBatch};
use arrow_ipc::reader::StreamReader;
use arrow_ipc::writer::StreamWriter;
use arrow_schema::{DataType, Field, Schema, SchemaRef};

pub use super::atomic_file::{commit, stage};
use super::key_schema::KeyedSession;
use super::metrics::Counters;
use super::session_store::SessionStore;
use crate::{Error, Result};

/// First bytes of every snapshot file: a name and the layout version.
pub const MAGIC: [u8; 8] = *b"WSSNAP\x00\x02";

/// The first bytes of older layouts, refused by name: the core's version 1, and what Python
/// code wrapped around it before the core had records mode, the wall clocks and compression.
const OLDER: [(&[u8], &str); 4] = [
    (b"WSSNAP\x00\x01", "layout version 1"),
    (b"WSRECS", "records mode's Python wrapper"),
    (b"WSCLOCK", "the wall clock's Python wrapper"),
    (b"WSZSTD01", "the Spark adapter's packed rows"),
];
/// zstd's level for snapshots: its fastest standard level (sorted times and fixed-width states
/// compress well at it).
const ZSTD_LEVEL: i32 = 1;
/// Bytes before the compressed payload.
pub const HEADER_LEN: usize = 20;
/// Rows per record batch in the payload.
const BATCH_ROWS: usize = 65_536;

const FORMAT: &str = "windowstore.format";
const FORMAT_VALUE: &str = "session-store/1";
const RETENTION: &str = "windowstore.retention";
const SEGMENT_INTERVAL: &str = "windowstore.segment_interval";
const STORE_TIME: &str = "windowstore.store_time";
const PUTS: &str = "windowstore.puts";
const REMOVES: &str = "windowstore.removes";
const EXPIRED_PUTS: &str = "windowstore.expired_puts";
const EXPIRED_SESSIONS: &str = "windowstore.expired_sessions";
const TABLES: &str = "windowstore.tables";
/// How many sessions the snapshot's rows hold (a row dropped from an edited snapshot is
/// refused; older snapshots without it are read as they are).
const SESSIONS: &str = "windowstore.sessions";

/// A table a caller keeps in a snapshot beside the sessions: its name, schema and batches.
pub type Table = (String, SchemaRef, Vec<RecordBatch>);

/// The Arrow schema of a snapshot's rows (and of [`entries_batches`]).
pub fn entries_schema() -> Schema {
    Schema::new(vec![
        Field::new("key", DataType::LargeBinary, false),
        Field::new("start", DataType::Int64, false),
        Field::new("end", DataType::Int64, false),
        Field::new("value", DataType::LargeBinary, false),
    ])
}

/// The store's live sessions as record batches of [`entries_schema`], by key, end, start.
pub fn entries_batches(store: &SessionStore) -> Result<Vec<RecordBatch>> {
    entries_batches_with(&store.entries(), Arc::new(entries_schema()))
}

fn entries_batches_with(
    entries: &[KeyedSession<'_>],
    schema: SchemaRef,
) -> Result<Vec<RecordBatch>> {
    let mut batches = Vec::with_capacity(entries.len().div_ceil(BATCH_ROWS).max(1));
    for chunk in entries.chunks(BATCH_ROWS) {
        // Sized once: grown as they filled, the byte buffers were copied again and again.
        let key_bytes = chunk.iter().map(|e| e.key.len()).sum();
        let value_bytes = chunk.iter().map(|e| e.session.value.len()).sum();
        let mut keys = LargeBinaryBuilder::with_capacity(chunk.len(), key_bytes);
        let mut starts = Int64Builder::with_capacity(chunk.len());
        let mut ends = Int64Builder::with_capacity(chunk.len());
        let mut values = LargeBinaryBuilder::with_capacity(chunk.len(), value_bytes);
        for e in chunk {
            keys.append_value(e.key);
            starts.append_value(e.session.start);
            ends.append_value(e.session.end);
            values.append_value(e.session.value);
        }
        let columns: Vec<ArrayRef> = vec![
            Arc::new(keys.finish()),
            Arc::new(starts.finish()),
            Arc::new(ends.finish()),
            Arc::new(values.finish()),
        ];
        batches.push(
            RecordBatch::try_new(schema.clone(), columns)
                .map_err(Error::arrow("building snapshot rows"))?,
        );
    }
    if batches.is_empty() {
        batches.push(RecordBatch::new_empty(schema));
    }
    Ok(batches)
}

/// Encodes `store` and the caller's `extra` metadata as snapshot file bytes.
pub fn encode(store: &SessionStore, extra: &HashMap<String, String>) -> Result<Vec<u8>> {
    encode_tables(store, extra, &[])
}

/// [`encode`], with the caller's `tables` after the sessions (names without commas).
pub fn encode_tables(
    store: &SessionStore,
    extra: &HashMap<String, String>,
    tables: &[Table],
) -> Result<Vec<u8>> {
    let mut counters = store.counters();
    counters.expired_sessions += store.expired_stored();
    let header = Header {
        retention: store.retention(),
        segment_interval: store.segment_interval(),
        store_time: store.store_time(),
        counters,
    };
    encode_parts(&header, &store.entries(), extra, tables)
}

/// What a snapshot says of the store beside its windows.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Header {
    pub retention: i64,
    pub segment_interval: i64,
    pub store_time: Option<i64>,
    /// The store's counters, with every expired window it still holds counted as expired
    /// (a snapshot leaves them out).
    pub counters: Counters,
}

/// Snapshot bytes of a store that `header` describes and holding the live windows `entries`
/// (ordered by key, end, start), with the caller's `extra` metadata and `tables`: the one
/// container of every store layout.
pub(crate) fn encode_parts(
    header: &Header,
    entries: &[KeyedSession<'_>],
    extra: &HashMap<String, String>,
    tables: &[Table],
) -> Result<Vec<u8>> {
    let counters = header.counters;
    let mut metadata = extra.clone();
    let names: Vec<&str> = tables.iter().map(|(name, _, _)| name.as_str()).collect();
    if !names.is_empty() {
        metadata.insert(TABLES.to_string(), names.join(","));
    }
    for (k, v) in [
        (FORMAT, FORMAT_VALUE.to_string()),
        (RETENTION, header.retention.to_string()),
        (SEGMENT_INTERVAL, header.segment_interval.to_string()),
        (
            STORE_TIME,
            header.store_time.map_or(String::new(), |t| t.to_string()),
        ),
        (PUTS, counters.puts.to_string()),
        (REMOVES, counters.removes.to_string()),
        (EXPIRED_PUTS, counters.expired_puts.to_string()),
        (EXPIRED_SESSIONS, counters.expired_sessions.to_string()),
    ] {
        metadata.insert(k.to_string(), v);
    }
    let batches = entries_batches_with(entries, Arc::new(entries_schema()))?;
    let sessions: usize = batches.iter().map(RecordBatch::num_rows).sum();
    metadata.insert(SESSIONS.to_string(), sessions.to_string());
    let schema = Arc::new(entries_schema().with_metadata(metadata));
    let batches = batches
        .into_iter()
        .map(|b| b.with_schema(schema.clone()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(Error::arrow("encoding snapshot"))?;
    // Room for the whole file: the batches' buffers, and a few kilobytes per message for the
    // schema, the metadata and the batches' headers and padding.
    let data: usize = batches.iter().map(RecordBatch::get_array_memory_size).sum();
    let mut out = Vec::with_capacity(HEADER_LEN + data / 2);
    out.extend_from_slice(&[0; HEADER_LEN]);
    let mut ipc = Vec::with_capacity(data + 4096 * (batches.len() + 2));
    let mut writer =
        StreamWriter::try_new(&mut ipc, &schema).map_err(Error::arrow("encoding snapshot"))?;
    for batch in batches {
        writer
            .write(&batch)
            .map_err(Error::arrow("encoding snapshot"))?;
    }
    writer.finish().map_err(Error::arrow("encoding snapshot"))?;
    drop(writer);
    for (_, schema, batches) in tables {
        let mut writer =
            StreamWriter::try_new(&mut ipc, schema).map_err(Error::arrow("encoding snapshot"))?;
        for batch in batches {
            writer
                .write(batch)
                .map_err(Error::arrow("encoding snapshot"))?;
        }
        writer.finish().map_err(Error::arrow("encoding snapshot"))?;
    }
    let compressed = zstd::bulk::compress(&ipc, ZSTD_LEVEL)
        .map_err(|e| Error::Internal(format!("compressing a snapshot: {e}")))?;
    out.extend_from_slice(&compressed);
    let payload_len = (out.len() - HEADER_LEN) as u64;
    let crc = crc32fast::hash(&out[HEADER_LEN..]);
    out[0..8].copy_from_slice(&MAGIC);
    out[8..16].copy_from_slice(&payload_len.to_le_bytes());
    out[16..20].copy_from_slice(&crc.to_le_bytes());
    Ok(out)
}

/// Decodes snapshot file bytes into a store and the caller's extra metadata (a snapshot with
/// tables is refused: see [`decode_tables`]).
///
/// `path` only names the file in errors.
pub fn decode(path: &Path, bytes: &[u8]) -> Result<(SessionStore, HashMap<String, String>)> {
    let (store, meta, tables) = decode_tables(path, bytes)?;
    if let Some((name, _, _)) = tables.first() {
        return Err(Error::snapshot(
            path,
            format!("a processor's snapshot (it holds {name}), not a store's"),
        ));
    }
    Ok((store, meta))
}

/// A store, the caller's extra metadata and its tables, in the order written.
pub type Decoded = (SessionStore, HashMap<String, String>, Vec<Table>);

/// Decodes snapshot file bytes written by [`encode_tables`].
pub fn decode_tables(path: &Path, bytes: &[u8]) -> Result<Decoded> {
    let refuse = |reason: String| Error::snapshot(path, reason);
    let payload = checked_payload(path, bytes)?;
    let ipc = zstd::stream::decode_all(payload)
        .map_err(|e| refuse(format!("unreadable zstd payload: {e}")))?;
    let mut rest = ipc.as_slice();
    let reader = StreamReader::try_new(&mut rest, None)
        .map_err(|e| refuse(format!("unreadable Arrow IPC payload: {e}")))?;
    let schema = reader.schema();
    let expected = entries_schema();
    if schema.fields() != expected.fields() {
        return Err(refuse(format!(
            "unexpected columns {:?}, expected {:?}",
            schema.fields(),
            expected.fields()
        )));
    }
    let mut metadata = schema.metadata().clone();
    let mut store = restored_store(path, &mut metadata)?;
    let names = metadata.remove(TABLES).unwrap_or_default();
    let sessions = metadata
        .remove(SESSIONS)
        .map(|n| parse::<usize>(&n, SESSIONS))
        .transpose()
        .map_err(refuse)?;
    let batches = reader
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| refuse(format!("unreadable record batch: {e}")))?;
    let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
    if sessions.is_some_and(|n| n != rows) {
        return Err(refuse(format!(
            "it declares {} sessions and holds {rows} (rows were added or removed)",
            sessions.unwrap_or(0)
        )));
    }
    let tables = read_tables(path, &mut rest, &names)?;
    if !rest.is_empty() {
        return Err(refuse(format!(
            "{} bytes after the tables the snapshot names",
            rest.len()
        )));
    }
    restore_rows(path, &mut store, &batches)?;
    Ok((store, metadata, tables))
}

/// The compressed payload of snapshot file `bytes`, once the header says it is one of this
/// layout and its length and checksum match.
fn checked_payload<'a>(path: &Path, bytes: &'a [u8]) -> Result<&'a [u8]> {
    let refuse = |reason: String| Error::snapshot(path, reason);
    if bytes.len() < HEADER_LEN {
        return Err(refuse(format!(
            "truncated: {} bytes, shorter than the {HEADER_LEN}-byte header",
            bytes.len()
        )));
    }
    if let Some((_, what)) = OLDER.iter().find(|(magic, _)| bytes.starts_with(magic)) {
        return Err(refuse(format!(
            "written in an older windowstore layout ({what}); this version reads layout 2 \
             only: start from a new snapshot, or a new checkpoint location for a Spark query"
        )));
    }
    if bytes[0..8] != MAGIC {
        return Err(refuse(
            "not a windowstore snapshot (bad magic bytes or unknown format version)".into(),
        ));
    }
    let declared = u64::from_le_bytes(bytes[8..16].try_into().expect("8 bytes"));
    let found = (bytes.len() - HEADER_LEN) as u64;
    if declared != found {
        let what = if found < declared {
            "truncated"
        } else {
            "trailing bytes"
        };
        return Err(refuse(format!(
            "{what}: header declares {declared} payload bytes, file has {found}"
        )));
    }
    let stored_crc = u32::from_le_bytes(bytes[16..20].try_into().expect("4 bytes"));
    let crc = crc32fast::hash(&bytes[HEADER_LEN..]);
    if stored_crc != crc {
        return Err(refuse(format!(
            "checksum mismatch: header has {stored_crc:#010x}, content hashes to {crc:#010x} \
             (the file was altered)"
        )));
    }
    Ok(&bytes[HEADER_LEN..])
}

/// An empty store with the parameters, store time and counters the sessions' schema
/// `metadata` holds, which it takes out of `metadata`.
fn restored_store(path: &Path, metadata: &mut HashMap<String, String>) -> Result<SessionStore> {
    let refuse = |reason: String| Error::snapshot(path, reason);
    let mut take = |name: &str| {
        metadata
            .remove(name)
            .ok_or_else(|| refuse(format!("metadata {name} is missing")))
    };
    let format = take(FORMAT)?;
    if format != FORMAT_VALUE {
        return Err(refuse(format!(
            "unsupported format {format:?}, expected {FORMAT_VALUE:?}"
        )));
    }
    let retention = parse::<i64>(&take(RETENTION)?, RETENTION).map_err(refuse)?;
    let interval = parse::<i64>(&take(SEGMENT_INTERVAL)?, SEGMENT_INTERVAL).map_err(refuse)?;
    let store_time = match take(STORE_TIME)?.as_str() {
        "" => None,
        t => Some(parse::<i64>(t, STORE_TIME).map_err(refuse)?),
    };
    let counters = Counters {
        puts: parse(&take(PUTS)?, PUTS).map_err(refuse)?,
        removes: parse(&take(REMOVES)?, REMOVES).map_err(refuse)?,
        expired_puts: parse(&take(EXPIRED_PUTS)?, EXPIRED_PUTS).map_err(refuse)?,
        expired_sessions: parse(&take(EXPIRED_SESSIONS)?, EXPIRED_SESSIONS).map_err(refuse)?,
    };
    SessionStore::restored(retention, interval, store_time, counters)
        .map_err(|e| refuse(format!("bad store parameters: {e}")))
}

/// The caller's tables `names` (comma-separated, in the order written), each an IPC stream
/// read from the front of `rest`.
fn read_tables(path: &Path, rest: &mut &[u8], names: &str) -> Result<Vec<Table>> {
    let refuse = |reason: String| Error::snapshot(path, reason);
    let mut tables = Vec::new();
    for name in names.split(',').filter(|n| !n.is_empty()) {
        let reader = StreamReader::try_new(&mut *rest, None)
            .map_err(|e| refuse(format!("unreadable table {name}: {e}")))?;
        let schema = reader.schema();
        let table = reader
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| refuse(format!("unreadable table {name}: {e}")))?;
        tables.push((name.to_string(), schema, table));
    }
    Ok(tables)
}

/// Puts the sessions of `batches` (rows of [`entries_schema`]) into `store`, each validated.
fn restore_rows(path: &Path, store: &mut SessionStore, batches: &[RecordBatch]) -> Result<()> {
    let refuse = |reason: String| Error::snapshot(path, reason);
    let columns = batches
        .iter()
        .map(columns_of)
        .collect::<Result<Vec<_>, _>>()
        .map_err(refuse)?;
    // Room for every row before the first goes in: a map reserved batch by batch still
    // rehashed everything in it at each growth.
    reserve(store, &columns);
    for (keys, starts, ends, values) in columns {
        for row in 0..keys.len() {
            store
                .restore_session(
                    keys.value(row),
                    starts.value(row),
                    ends.value(row),
                    values.value(row),
                )
                .map_err(refuse)?;
        }
    }
    Ok(())
}

/// A batch's four columns, typed.
type Columns<'a> = (
    &'a LargeBinaryArray,
    &'a Int64Array,
    &'a Int64Array,
    &'a LargeBinaryArray,
);

fn columns_of(batch: &RecordBatch) -> Result<Columns<'_>, String> {
    if let Some((i, _)) = batch
        .columns()
        .iter()
        .enumerate()
        .find(|(_, c)| c.null_count() > 0)
    {
        return Err(format!(
            "column {} holds nulls",
            batch.schema().field(i).name()
        ));
    }
    let column = |i: usize| batch.column(i).as_any();
    let (Some(keys), Some(starts), Some(ends), Some(values)) = (
        column(0).downcast_ref::<LargeBinaryArray>(),
        column(1).downcast_ref::<Int64Array>(),
        column(2).downcast_ref::<Int64Array>(),
        column(3).downcast_ref::<LargeBinaryArray>(),
    ) else {
        return Err("columns of unexpected types".into());
    };
    Ok((keys, starts, ends, values))
}

/// Makes room in `store` for the snapshot's rows before they are put: their keys, and each
/// segment's keys and value bytes. The rows come by key, then end, so a key's rows in one
/// segment are neighbours and counted once.
fn reserve(store: &mut SessionStore, columns: &[Columns<'_>]) {
    // By segment id: an end in it, its keys, its arena bytes.
    let mut segments: hashbrown::HashMap<i64, (i64, usize, usize)> = hashbrown::HashMap::new();
    let mut distinct = 0;
    let mut last: Option<(&[u8], i64)> = None;
    let rows = columns.iter().flat_map(|&(keys, _, ends, values)| {
        (0..keys.len()).map(move |row| (keys.value(row), ends.value(row), values.value(row).len()))
    });
    for (key, end, len) in rows {
        let id = store.segment_id(end);
        let room = segments.entry(id).or_insert((end, 0, 0));
        let new_key = last.is_none_or(|(k, _)| k != key);
        distinct += usize::from(new_key);
        if new_key || last.is_some_and(|(_, i)| i != id) {
            room.1 += 1;
        }
        if len < super::segment::BIG_VALUE_BYTES {
            room.2 += len;
        }
        last = Some((key, id));
    }
    let room: Vec<(i64, usize, usize)> = segments.into_values().collect();
    store.reserve_restored(distinct, &room);
}

fn parse<T: std::str::FromStr>(text: &str, name: &str) -> Result<T, String> {
    text.parse()
        .map_err(|_| format!("metadata {name} is not a number: {text:?}"))
}

/// Writes `store` to `path` atomically, with `extra` metadata for the caller.
pub fn write(store: &SessionStore, path: &Path, extra: &HashMap<String, String>) -> Result<()> {
    let bytes = encode(store, extra)?;
    let staged = stage(path, &bytes)?;
    commit(&staged, path)
}

/// Reads the snapshot at `path`: the store and the caller's extra metadata.
pub fn read(path: &Path) -> Result<(SessionStore, HashMap<String, String>)> {
    let bytes = fs::read(path).map_err(|e| Error::snapshot(path, format!("cannot read: {e}")))?;
    decode(path, &bytes)
}

impl SessionStore {
    /// Writes the store to `path` atomically (see the module docs for the format).
    ///
    /// The snapshot holds the live sessions: those that expired in a segment still stored for
    /// its live ones are left out and counted in `expired_sessions`, which the store itself
    /// counts once their segment goes. So a restored store and its original write the same
    /// snapshots from then on.
    pub fn snapshot(&self, path: impl AsRef<Path>) -> Result<()> {
        write(self, path.as_ref(), &HashMap::new())
    }

    /// Reads a store written by [`SessionStore::snapshot`]; refuses a damaged file whole.
    pub fn restore(path: impl AsRef<Path>) -> Result<Self> {
        read(path.as_ref()).map(|(store, _)| store)
    }
}
