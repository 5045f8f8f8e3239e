//! A processor's progress through its input, beside its windows: stream time, what was
//! emitted, the arrival counter, the rejections and the end of input.

use crate::reject::{Reason, RejectMark, Rejections};
use crate::{Error, Result};

/// A processor's progress through its input.
#[derive(Debug)]
pub(crate) struct Lifecycle {
    /// The largest record time looked at.
    pub stream_time: Option<i64>,
    /// Every window whose closing bound lies below this has been emitted (final mode; the
    /// bound is the kind's: a session's reach, a sliding window's end).
    pub emitted_below: i64,
    /// The next record's arrival number.
    pub seq: u64,
    /// The largest window end put so far: what Kafka's store calls its observed time, by
    /// which it expires windows (sessions use it to see only what Kafka's store would show).
    pub latest_end: Option<i64>,
    pub rejections: Rejections,
    /// End of input was signalled: no more input.
    pub flushed: bool,
}

impl Default for Lifecycle {
    fn default() -> Self {
        Self {
            stream_time: None,
            emitted_below: i64::MIN,
            seq: 0,
            latest_end: None,
            rejections: Rejections::default(),
            flushed: false,
        }
    }
}

/// The scalar state a snapshot restores.
#[derive(Debug)]
pub(crate) struct Restored {
    pub stream_time: Option<i64>,
    pub emitted_below: i64,
    pub seq: u64,
    pub latest_end: Option<i64>,
    pub flushed: bool,
    pub rejected: Vec<(Reason, u64)>,
}

/// Where a lifecycle stood before a call, for a rollback.
#[derive(Debug)]
pub(crate) struct LifeMark {
    stream_time: Option<i64>,
    emitted_below: i64,
    seq: u64,
    latest_end: Option<i64>,
    flushed: bool,
    rejections: RejectMark,
}

impl Lifecycle {
    /// Refuses a call of `method` (its public name) after the end of input.
    pub fn check_usable(&self, method: &'static str) -> Result<()> {
        if self.flushed {
            return Err(Error::ProcessorClosed { method });
        }
        Ok(())
    }

    /// The state a snapshot carried.
    pub fn restore(&mut self, state: Restored) {
        self.stream_time = state.stream_time;
        self.emitted_below = state.emitted_below;
        self.seq = state.seq;
        self.latest_end = state.latest_end;
        self.flushed = state.flushed;
        for (reason, count) in state.rejected {
            self.rejections.set_count(reason, count);
        }
    }

    /// Advances stream time to `t`; returns it.
    #[inline]
    pub fn observe(&mut self, t: i64) -> i64 {
        let st = self.stream_time.map_or(t, |s| s.max(t));
        self.stream_time = Some(st);
        st
    }

    /// Where the lifecycle stands now.
    pub fn mark(&self) -> LifeMark {
        LifeMark {
            stream_time: self.stream_time,
            emitted_below: self.emitted_below,
            seq: self.seq,
            latest_end: self.latest_end,
            flushed: self.flushed,
            rejections: self.rejections.mark(),
        }
    }

    /// Back to `mark`.
    pub fn rollback(&mut self, mark: &LifeMark) {
        self.stream_time = mark.stream_time;
        self.emitted_below = mark.emitted_below;
        self.seq = mark.seq;
        self.latest_end = mark.latest_end;
        self.flushed = mark.flushed;
        self.rejections.rollback(&mark.rejections);
    }
}
