//! One key's sessions read out of the store into memory: a record, or a key's records of a
//! call, change them here, and what changed is written back at once.

use super::value::{encode, parse, Mem};
use crate::processor::Applying;
use crate::store::session_store::PutOutcome;
use crate::{Error, Result, SessionStore};

use super::CappedSessionSpec;

/// The sessions of one key, in start order, and the bounds the store holds them under.
#[derive(Debug, Default)]
pub(super) struct KeySessions {
    pub list: Vec<Mem>,
    in_store: Vec<(i64, i64)>,
    spare: Vec<Mem>,
}

impl KeySessions {
    /// Reads the sessions of `key` whose closing is at least `lower`.
    pub fn load(&mut self, store: &SessionStore, key: &[u8], lower: i64) -> Result<()> {
        while let Some(m) = self.list.pop() {
            self.retire(m);
        }
        self.in_store.clear();
        for s in store.find_sessions(key, lower, i64::MAX) {
            let v = parse(s.value).map_err(|why| {
                Error::Internal(format!(
                    "a capped session's stored value is unreadable: {why}"
                ))
            })?;
            let mut m = self.fresh();
            m.start = s.start;
            m.end = v.end;
            m.reach = s.end;
            m.flags = v.flags;
            m.state.extend_from_slice(v.state);
            m.records.extend_from_slice(v.records);
            self.in_store.push((s.start, s.end));
            self.list.push(m);
        }
        self.list.sort_unstable_by_key(|m| m.start);
        Ok(())
    }

    /// An empty session, its buffers reused.
    pub fn fresh(&mut self) -> Mem {
        self.spare.pop().unwrap_or_default()
    }

    /// Gives a session's buffers back for reuse.
    pub fn retire(&mut self, mut m: Mem) {
        m.state.clear();
        m.records.clear();
        m.dirty = false;
        self.spare.push(m);
    }

    /// Puts every session that changed (through `Applying::put`, or with `keep_time` through
    /// `SessionStore::put_keeping_time`, which leaves store time alone), then removes what the store
    /// has under bounds no session has any longer; `value` is a buffer.
    pub fn write_back(
        &mut self,
        step: &mut Applying<'_, CappedSessionSpec>,
        key: &[u8],
        keep_time: bool,
        value: &mut Vec<u8>,
    ) -> Result<()> {
        for m in self.list.iter_mut().filter(|m| m.dirty) {
            encode(m, value)?;
            let outcome = if keep_time {
                step.store
                    .put_keeping_time((key, None), m.start, m.reach, value)?
            } else {
                step.put(key, m.start, m.reach, value)?
            };
            if outcome == PutOutcome::Expired {
                // Unreachable: a session that is not closed is within retention.
                return Err(Error::Internal(format!(
                    "a capped session [{}, {}] expired as it was put",
                    m.start, m.end
                )));
            }
            m.dirty = false;
        }
        for &(start, reach) in &self.in_store {
            if !self
                .list
                .iter()
                .any(|m| (m.start, m.reach) == (start, reach))
            {
                step.store.remove(key, start, reach);
            }
        }
        self.in_store.clear();
        self.in_store
            .extend(self.list.iter().map(|m| (m.start, m.reach)));
        Ok(())
    }
}
