//! What one record does to its key's sessions in memory (`super::key`): in time order and
//! starting no session, it joins the latest one or starts its own, in place; otherwise the
//! sessions it can change are cut again by the complete-data rule (`recut`), and the record is
//! late if and only if that changes a closed session (see `super`'s module doc).

use super::key::KeySessions;
use super::value::{put_record, read_records, Mem, Rec};
use super::{CappedSessionSpec, CappedTicks, Prepared, CUT, ENDED, STARTED};
use crate::agg::fill_overflow;
use crate::agg::fold::Order;
use crate::emit::EmitMode;
use crate::input::markers::{ENDS, STARTS};
use crate::processor::{Applying, Record, WindowKind};
use crate::session::cuts::{closing, group_flags, Open};
use crate::session::rule::change;
use crate::store::{KeyedSession, Session};
use crate::{Error, Result};

/// A session of the key read into scratch for a re-cut.
#[derive(Debug, Clone, Copy)]
struct Old {
    start: i64,
    end: i64,
    /// Its closing, the bound it is stored under.
    reach: i64,
    flags: u8,
    state: (usize, usize),
    /// Its records' stored bytes in the scratch bytes.
    raw: (usize, usize),
    /// Its records once read: `recs[records.0..records.1]`.
    records: (usize, usize),
}

/// A session of the re-cut.
#[derive(Debug, Clone, Copy)]
struct New {
    start: i64,
    end: i64,
    /// Its closing.
    reach: i64,
    flags: u8,
    /// The old session whose records, all of them, begin it (none of them the new record), if
    /// any: its stored records and its state are where this one's start.
    prefix: Option<usize>,
    /// Its other records, `region[records.0..records.1]`.
    records: (usize, usize),
    state: (usize, usize),
}

impl New {
    /// The old session it equals (the same records), if any.
    fn same_as(&self) -> Option<usize> {
        self.prefix.filter(|_| self.records.0 == self.records.1)
    }
}

/// Buffers reused from record to record.
#[derive(Debug, Default)]
pub struct Scratch {
    pub(super) key: KeySessions,
    pub(super) value: Vec<u8>,
    own: Vec<u8>,
    bytes: Vec<u8>,
    old: Vec<Old>,
    recs: Vec<Rec>,
    region: Vec<Rec>,
    groups: Vec<u8>,
    new: Vec<New>,
    states: Vec<u8>,
    acc: Vec<u8>,
    merged: Vec<u8>,
}

/// What applying one record changed, counted as the store counts the puts and removes of the
/// record path.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Applied {
    pub puts: u64,
    pub removes: u64,
    /// The largest closing put.
    pub max_end: Option<i64>,
    /// The record met no session of its key.
    pub isolated: bool,
}

/// Applies record `r` to its key's sessions in `sc.key` (which hold every session of the key
/// whose closing is at least `r.t - max_gap`); `None`, having changed nothing, if it is late.
/// A session whose closing a start marker lowers below what `final` mode has emitted is
/// emitted at once. With `batched`, a closing lowered below the record's close time is an
/// error instead, and the call goes record by record (whose output order that keeps).
pub(super) fn apply_record(
    ticks: &CappedTicks,
    step: &mut Applying<'_, CappedSessionSpec>,
    sc: &mut Scratch,
    r: &Record<'_, Prepared>,
    batched: bool,
) -> Result<Option<Applied>> {
    let t = r.t;
    let close = r.stream_time.saturating_sub(ticks.session.grace);
    let list = &sc.key.list;
    let lower = t.saturating_sub(ticks.session.max_gap);
    // The sessions that can change: S0 (the last one starting at or before t) if t is within
    // its closing, every session starting after t, and for a record that starts a session,
    // the one before S0 if its closing reaches t (it can fall to just before the record).
    let after = list.partition_point(|m| m.start <= t);
    let mut first = match list[..after].iter().rposition(|m| m.reach >= lower) {
        Some(i) if list[i].reach >= t => i,
        _ => after,
    };
    let starts = r.prepared.flags & STARTS != 0;
    if starts {
        if let Some(p) = list[..first].iter().rposition(|m| m.reach >= lower) {
            if list[p].reach >= t {
                first = p;
            }
        }
    }
    // A closed session is final: with one among them, only the exact re-cut can tell whether
    // the record leaves it as it is.
    let closed = list[first..].iter().any(|m| m.reach < close);
    sc.own.clear();
    step.aggs
        .encode_input(r.inputs, r.row, t, r.seq, &mut sc.own);
    let in_place = list.len() - first <= 1
        && list
            .get(first)
            .is_none_or(|s0| s0.end <= t && !closed && !starts);
    if in_place {
        append(ticks, step, sc, r, first)
    } else {
        recut_region(ticks, step, sc, r, first, batched)
    }
}

/// The record at or after every record of the key's sessions that can change, starting no
/// session: it joins `S0` (`sc.key.list[first]`, if any, the only session it can change) or
/// starts a session of its own after it, the cut points before it unchanged.
fn append(
    ticks: &CappedTicks,
    step: &mut Applying<'_, CappedSessionSpec>,
    sc: &mut Scratch,
    r: &Record<'_, Prepared>,
    first: usize,
) -> Result<Option<Applied>> {
    let (t, own) = (r.t, r.prepared);
    let reach = t + own.gap;
    let close = r.stream_time.saturating_sub(ticks.session.grace);
    let before = sc.key.list.get(first).map(|s| Open {
        start: s.start,
        end: s.end,
        reach: s.reach,
        ends: s.flags & ENDED != 0,
    });
    let own_rec = Rec {
        t,
        seq: r.seq,
        gap: own.gap,
        flags: own.flags,
        state: (0, 0),
    };
    let mut applied = Applied {
        puts: 1,
        ..Applied::default()
    };
    match before {
        Some(mut session) if session.joins(t, own.flags, ticks.max_duration) => {
            session.add(t, reach, own.flags);
            let closing = session.last_join();
            // Accepting it would make a closed session of an open one.
            if t < close && closing < close {
                return Ok(None);
            }
            let s0 = &mut sc.key.list[first];
            // The changelog forwards the window's update, after a delete if it moved.
            let (log, moved) = (step.mode != EmitMode::Final, s0.end != t);
            if log && moved {
                let state = s0.state.clone();
                step.changelog
                    .push(change(r.key, s0.start, s0.end, state, true), false);
            }
            // merge(state, record), folded in place where the states have one size.
            if step.aggs.folds_in_place() {
                let named = |e| fill_overflow(e, step.keys.render(r.key), s0.start, t);
                let input = (r.inputs, r.row);
                step.aggs
                    .fold_row(
                        &mut s0.state,
                        input,
                        (t, r.seq),
                        &mut sc.merged,
                        Order::StateFirst,
                    )
                    .map_err(named)?;
            } else {
                sc.merged.clear();
                step.merge(r.key, (s0.start, t), &s0.state, &sc.own, &mut sc.merged)?;
                std::mem::swap(&mut s0.state, &mut sc.merged);
            }
            if log {
                let state = s0.state.clone();
                step.changelog
                    .push(change(r.key, s0.start, t, state, false), moved);
            }
            put_record(&own_rec, &sc.own, ticks.marked, &mut s0.records)?;
            applied.removes = u64::from(closing != s0.reach);
            s0.flags = (s0.flags & (CUT | STARTED)) | flag(session.ends, ENDED);
            s0.end = t;
            s0.reach = closing;
            s0.dirty = true;
            applied.max_end = Some(closing);
        }
        _ => {
            let closing = Open::new(t, reach, own.flags).last_join();
            if t < close && closing < close {
                return Ok(None);
            }
            let cut = before.is_some_and(|s| s.by_gap(t, own.flags));
            step.counters.max_duration_cuts += u64::from(cut);
            let mut m = sc.key.fresh();
            m.start = t;
            m.end = t;
            m.reach = closing;
            m.flags = flag(cut, CUT) | marks(own.flags, own.flags);
            m.state.extend_from_slice(&sc.own);
            put_record(&own_rec, &sc.own, ticks.marked, &mut m.records)?;
            m.dirty = true;
            if step.mode != EmitMode::Final {
                let state = m.state.clone();
                step.changelog.push(change(r.key, t, t, state, false), true);
            }
            sc.key.list.push(m);
            applied.max_end = Some(closing);
            applied.isolated = true;
        }
    }
    step.latest_end = Some(step.latest_end.map_or(t, |e| e.max(t)));
    Ok(Some(applied))
}

/// The sessions of `sc.key.list[first..]` and the record cut again by the complete-data rule,
/// in place of those sessions; `None`, having changed nothing, if the record is late.
fn recut_region(
    ticks: &CappedTicks,
    step: &mut Applying<'_, CappedSessionSpec>,
    sc: &mut Scratch,
    r: &Record<'_, Prepared>,
    first: usize,
    batched: bool,
) -> Result<Option<Applied>> {
    let close = r.stream_time.saturating_sub(ticks.session.grace);
    sc.bytes.clear();
    sc.old.clear();
    sc.recs.clear();
    for m in &sc.key.list[first..] {
        let state = sc.bytes.len();
        sc.bytes.extend_from_slice(&m.state);
        let state = (state, sc.bytes.len());
        sc.bytes.extend_from_slice(&m.records);
        sc.old.push(Old {
            start: m.start,
            end: m.end,
            reach: m.reach,
            flags: m.flags,
            state,
            raw: (state.1, sc.bytes.len()),
            records: (0, 0),
        });
    }
    let at = sc.bytes.len();
    sc.bytes.extend_from_slice(&sc.own);
    let own = Rec {
        t: r.t,
        seq: r.seq,
        gap: r.prepared.gap,
        flags: r.prepared.flags,
        state: (at, sc.bytes.len()),
    };
    sc.region.clear();
    sc.new.clear();
    recut(sc, own, ticks.max_duration, ticks.marked)?;
    if changes_closed(sc, close, r.t) {
        return Ok(None);
    }
    keep_closed(sc, close);
    states(step, sc, r.key)?;
    let batched = batched.then_some(close);
    let applied = rebuild(step, sc, r.key, first, ticks.marked, batched)?;
    Ok(Some(applied))
}

/// Whether accepting the re-cut changes a closed session (its records, bounds or flags), or,
/// for a record before `close` (one beyond the grace), makes a session that is closed already
/// (closing below `close`). A record within the grace can make one: the records before a
/// start marker at `close` close just before it (in `final` mode `apply` or the end of the
/// call emits them).
fn changes_closed(sc: &Scratch, close: i64, t: i64) -> bool {
    let same = |n: &New| n.same_as().filter(|&o| sc.old[o].flags == n.flags);
    let makes_closed = t < close && sc.new.iter().any(|n| n.reach < close && same(n).is_none());
    makes_closed
        || sc
            .old
            .iter()
            .enumerate()
            .any(|(i, o)| o.reach < close && !sc.new.iter().any(|n| same(n) == Some(i)))
}

/// Keeps the stored closing of every closed session the re-cut leaves as it is (a start marker
/// after it may lower its closing, which no longer matters once it is closed).
fn keep_closed(sc: &mut Scratch, close: i64) {
    for n in &mut sc.new {
        if let Some(o) = n.same_as().map(|o| sc.old[o]) {
            if o.reach < close && o.flags == n.flags {
                n.reach = o.reach;
            }
        }
    }
}

/// Cuts the records of `sc.old` and record `own` into `sc.new` by the complete-data rule, and
/// finds the old sessions whose records begin new ones. The first session keeps the `CUT` flag
/// of the old session it starts at (the boundary before it does not move), unless a start
/// marker now begins it.
fn recut(sc: &mut Scratch, own: Rec, cap: i64, marked: bool) -> Result<()> {
    for i in 0..sc.old.len() {
        let from = sc.recs.len();
        read_records(&sc.bytes, sc.old[i].raw, marked, &mut sc.recs).map_err(|why| {
            Error::Internal(format!("a capped session's records are unreadable: {why}"))
        })?;
        sc.old[i].records = (from, sc.recs.len());
    }
    // The records in (time, arrival) order: the new one after every record at or before its
    // time (its arrival is the latest).
    let mut placed = None;
    for o in &sc.old {
        for rec in &sc.recs[o.records.0..o.records.1] {
            if placed.is_none() && rec.t > own.t {
                placed = Some(sc.region.len());
                sc.region.push(own);
            }
            sc.region.push(*rec);
        }
    }
    let own = placed.unwrap_or_else(|| {
        sc.region.push(own);
        sc.region.len() - 1
    });
    let region = &sc.region;
    group_flags(
        region.len(),
        |i| region[i].t,
        |i| region[i].flags,
        &mut sc.groups,
    );
    let groups = &sc.groups;
    let first_cut =
        own != 0 && sc.old.first().is_some_and(|o| o.flags & CUT != 0) && groups[0] & STARTS == 0;
    let (mut i, mut before): (usize, Option<Open>) = (0, None);
    while i < region.len() {
        let (r0, g0) = (region[i], groups[i]);
        let cut = before.map_or(first_cut, |p| p.by_gap(r0.t, g0));
        let mut session = Open::new(r0.t, r0.t + r0.gap, g0);
        let mut j = i + 1;
        while j < region.len() && session.joins(region[j].t, groups[j], cap) {
            session.add(region[j].t, region[j].t + region[j].gap, groups[j]);
            j += 1;
        }
        let len = |o: &Old| o.records.1 - o.records.0;
        let prefix = sc.old.iter().position(|o| {
            sc.recs[o.records.0].seq == r0.seq && i + len(o) <= j && !(i..i + len(o)).contains(&own)
        });
        sc.new.push(New {
            start: r0.t,
            end: session.end,
            reach: session.last_join(),
            flags: flag(cut, CUT) | marks(g0, groups[j - 1]),
            prefix,
            records: (i + prefix.map_or(0, |o| len(&sc.old[o])), j),
            state: (0, 0),
        });
        before = Some(session);
        i = j;
    }
    // A session that a start marker follows closes just before it.
    for k in 1..sc.new.len() {
        let next = &sc.new[k];
        let next = (
            next.start,
            if next.flags & STARTED != 0 { STARTS } else { 0 },
        );
        sc.new[k - 1].reach = closing(sc.new[k - 1].reach, Some(next));
    }
    Ok(())
}

/// The aggregate state of every new session, into `sc.states`: that of the old session its
/// records begin with, if any (an unchanged session keeps its state, a record appended in time
/// order costs one merge), merged with each of its other records' states.
fn states(step: &Applying<'_, CappedSessionSpec>, sc: &mut Scratch, key: &[u8]) -> Result<()> {
    sc.states.clear();
    for n in sc.new.iter_mut() {
        sc.acc.clear();
        if let Some(o) = n.prefix.map(|o| sc.old[o]) {
            sc.acc.extend_from_slice(&sc.bytes[o.state.0..o.state.1]);
        }
        for r in &sc.region[n.records.0..n.records.1] {
            let state = &sc.bytes[r.state.0..r.state.1];
            if sc.acc.is_empty() {
                sc.acc.extend_from_slice(state);
                continue;
            }
            sc.merged.clear();
            step.merge(key, (n.start, n.end), &sc.acc, state, &mut sc.merged)?;
            std::mem::swap(&mut sc.acc, &mut sc.merged);
        }
        let at = sc.states.len();
        sc.states.extend_from_slice(&sc.acc);
        n.state = (at, sc.states.len());
    }
    Ok(())
}

/// `f` if `on`, else no flag.
fn flag(on: bool, f: u8) -> u8 {
    if on {
        f
    } else {
        0
    }
}

/// A session's marker flags from the group flags at its start and at its end.
pub(super) fn marks(first: u8, last: u8) -> u8 {
    flag(first & STARTS != 0, STARTED) | flag(last & ENDS != 0, ENDED)
}

/// Puts the re-cut's sessions in place of `sc.key.list[first..]` (an unchanged one keeps its
/// buffers), counting the puts and removes the record path makes and the cuts; in `final`
/// mode, emits a session whose closing fell below what was emitted already. On the batched
/// path (`batched`: the record's close time), a session whose closing falls below the close
/// time is an error instead (see [`apply_record`]): the record path may emit it at once.
fn rebuild(
    step: &mut Applying<'_, CappedSessionSpec>,
    sc: &mut Scratch,
    key: &[u8],
    first: usize,
    marked: bool,
    batched: Option<i64>,
) -> Result<Applied> {
    let mut old: Vec<Option<Mem>> = sc.key.list.drain(first..).map(Some).collect();
    let mut applied = Applied::default();
    let cuts = |flags: u8| u64::from(flags & CUT != 0);
    let was: u64 = sc.old.iter().map(|o| cuts(o.flags)).sum();
    let now: u64 = sc.new.iter().map(|n| cuts(n.flags)).sum();
    let c = &mut step.counters.max_duration_cuts;
    *c = (*c + now).saturating_sub(was);
    for n in sc.new.iter() {
        let same = n.same_as().filter(|&o| sc.old[o].flags == n.flags);
        let m = match same.and_then(|o| old[o].take()) {
            Some(m) if m.reach == n.reach => {
                sc.key.list.push(m);
                continue;
            }
            Some(mut m) => {
                m.reach = n.reach;
                m
            }
            None => {
                let mut m = sc.key.fresh();
                m.start = n.start;
                m.end = n.end;
                m.reach = n.reach;
                m.flags = n.flags;
                m.state.extend_from_slice(&sc.states[n.state.0..n.state.1]);
                if let Some(o) = n.prefix {
                    let raw = sc.old[o].raw;
                    m.records.extend_from_slice(&sc.bytes[raw.0..raw.1]);
                }
                for rec in &sc.region[n.records.0..n.records.1] {
                    put_record(
                        rec,
                        &sc.bytes[rec.state.0..rec.state.1],
                        marked,
                        &mut m.records,
                    )?;
                }
                m
            }
        };
        applied.puts += 1;
        applied.max_end = applied.max_end.max(Some(m.reach));
        step.latest_end = Some(step.latest_end.map_or(m.end, |e| e.max(m.end)));
        if batched.is_some_and(|close| m.reach < close) {
            return Err(Error::Internal(
                "a start marker closed a session at once: the call goes record by record".into(),
            ));
        }
        if step.mode == EmitMode::Final && m.reach < step.emitted_below {
            super::value::encode(&m, &mut sc.value)?;
            let session = Session {
                start: m.start,
                end: m.reach,
                value: &sc.value,
            };
            CappedSessionSpec::final_row(&KeyedSession { key, session }, &mut step.finals);
        }
        let mut m = m;
        m.dirty = true;
        sc.key.list.push(m);
    }
    if step.mode != EmitMode::Final {
        changelog(step, sc, key);
    }
    applied.removes = sc
        .old
        .iter()
        .filter(|o| {
            !sc.key.list[first..]
                .iter()
                .any(|m| (m.start, m.reach) == (o.start, o.reach))
        })
        .count() as u64;
    for m in old.into_iter().flatten() {
        sc.key.retire(m);
    }
    Ok(applied)
}

/// The changelog of the re-cut: a delete of each old window the re-cut does not keep (a window
/// it keeps, with other records, is forwarded as an update without one), then an upsert of
/// each new window with other records than before.
fn changelog(step: &mut Applying<'_, CappedSessionSpec>, sc: &Scratch, key: &[u8]) {
    for (i, o) in sc.old.iter().enumerate() {
        let kept = sc
            .new
            .iter()
            .any(|n| n.same_as() == Some(i) || (n.start, n.end) == (o.start, o.end));
        if !kept {
            let state = sc.bytes[o.state.0..o.state.1].to_vec();
            step.changelog
                .push(change(key, o.start, o.end, state, true), false);
        }
    }
    for n in sc.new.iter().filter(|n| n.same_as().is_none()) {
        let created = !sc.old.iter().any(|o| (o.start, o.end) == (n.start, n.end));
        let state = sc.states[n.state.0..n.state.1].to_vec();
        step.changelog
            .push(change(key, n.start, n.end, state, false), created);
    }
}
