//! Large values written from the cache's own memory: a GET's reply names the value's bytes in
//! its segment instead of copying them into the connection's write buffer.
//!
//! A reply is built in the write buffer as always, except that for a value of at least
//! [`PIN_MIN`] bytes the handler writes the header, takes the value as a
//! [`ValuePin`](fridge_engine::ValuePin) (`Worker::get_pinned`, which keeps the segment from
//! being reused until the pin goes: `fridge_engine`'s `pin.rs`) and records it here at the
//! buffer position where its bytes belong, then writes the trailer. The connection's writes
//! send the buffer up to that position and the pinned bytes together in one `writev`
//! ([`Pins::slices`]), over as many turns as the socket needs (the write chunk bounds each
//! turn, as for buffered bytes), and drop the pin once its last byte is sent — or when the
//! connection closes, or its reply is dropped ([`Pins::truncate`]). Where the engine gives no
//! pin (its budget is spent), the handler copies as before; so does a command run for a
//! script or inside `EXEC` (`Session::deny_blocking`), whose reply is built in a buffer of
//! its own or cut to a limit.
//!
//! What it saves: for a 1 MB GET, the copy into the write buffer (the kernel's copy into the
//! socket stays) and the buffer's growth to the value's size. A connection's pinned bytes
//! count toward its unsent output (`Conn::pending_out`), so the output limit, the soft limit
//! that pauses a multi-key read, and `CLIENT LIST`'s `obl` see them as before.

use std::collections::VecDeque;

use fridge_engine::ValuePin;

/// Values this long or longer are written from their segment (shorter ones are cheaper to
/// copy than to pin: two shared counters and one more slice per write).
pub(crate) const PIN_MIN: usize = 32 << 10;

/// Writes a value whose header `out` ends with: as `pin`'s place in `pins` where the read
/// gave one, else copied into `out` (the caller writes the trailer).
#[inline]
pub(crate) fn put_value(out: &mut Vec<u8>, pins: &mut Pins, value: &[u8], pin: Option<ValuePin>) {
    match pin {
        Some(pin) => pins.push(out.len(), pin),
        None => out.extend_from_slice(value),
    }
}

/// A connection's pinned values not yet sent (see the module doc).
#[derive(Debug, Default)]
pub(crate) struct Pins {
    /// (position in the write buffer the value's bytes go before, the value), in order.
    queue: VecDeque<(usize, ValuePin)>,
    /// Bytes of the front value already sent.
    sent: usize,
    /// Unsent pinned bytes.
    bytes: usize,
}

impl Pins {
    /// The value of `pin` goes at position `at` of the write buffer (its length now: the
    /// header is written, the trailer not yet).
    pub(crate) fn push(&mut self, at: usize, pin: ValuePin) {
        debug_assert!(self.queue.back().is_none_or(|(last, _)| *last <= at));
        self.bytes += pin.bytes().len();
        self.queue.push_back((at, pin));
    }

    /// Unsent pinned bytes.
    #[inline]
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// The write buffer was cut back to `len` bytes (a reply dropped, `CLIENT REPLY OFF`):
    /// the values of the dropped part go too.
    pub(crate) fn truncate(&mut self, len: usize) {
        while self.queue.back().is_some_and(|(at, _)| *at > len) {
            let (_, pin) = self.queue.pop_back().expect("checked");
            let unsent = pin.bytes().len() - if self.queue.is_empty() { self.sent } else { 0 };
            self.bytes -= unsent;
            if self.queue.is_empty() {
                self.sent = 0;
            }
        }
    }

    /// The write buffer's first `n` bytes were dropped (all sent): positions move down.
    pub(crate) fn shift(&mut self, n: usize) {
        for (at, _) in &mut self.queue {
            *at -= n;
        }
    }

    /// What to write next, at most `budget` bytes, from a buffer whose unsent part starts at
    /// `wpos`: the buffer's bytes up to the first value, then that value's unsent bytes.
    pub(crate) fn slices<'a>(
        &'a self,
        wbuf: &'a [u8],
        wpos: usize,
        budget: usize,
    ) -> [&'a [u8]; 2] {
        let Some((at, pin)) = self.queue.front() else {
            return [&wbuf[wpos..wbuf.len().min(wpos + budget)], &[]];
        };
        let buffered = &wbuf[wpos..(*at).min(wpos + budget)];
        if wpos + buffered.len() < *at {
            return [buffered, &[]];
        }
        let rest = &pin.bytes()[self.sent..];
        [buffered, &rest[..rest.len().min(budget - buffered.len())]]
    }

    /// `n` bytes of what [`Pins::slices`] gave for `wpos` were written: returns the new
    /// `wpos`, dropping each value whose last byte went.
    pub(crate) fn advance(&mut self, wpos: usize, mut n: usize) -> usize {
        let Some(&(at, _)) = self.queue.front() else { return wpos + n };
        let buffered = n.min(at - wpos);
        n -= buffered;
        if n > 0 {
            self.sent += n;
            self.bytes -= n;
            if self.sent == self.queue[0].1.bytes().len() {
                self.queue.pop_front();
                self.sent = 0;
            }
        }
        wpos + buffered
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use fridge_engine::{Engine, EngineConfig, Kind, ManualClock, Store, TenantId, ValuePin};

    use super::Pins;

    fn pins_of(values: &[&[u8]]) -> (Engine, Vec<ValuePin>) {
        let config = EngineConfig { max_memory: 16 << 20, ..EngineConfig::default() };
        let engine = Engine::with_clock(config, Arc::new(ManualClock::new(1))).unwrap();
        let mut w = engine.worker().unwrap();
        let mut pins = Vec::new();
        for (i, v) in values.iter().enumerate() {
            let key = [i as u8];
            w.store(Store::new(TenantId(0), &key, v)).unwrap();
            let got = w.get_pinned(TenantId(0), &key, Kind::STRING, 1, |_, p| p);
            pins.push(got.unwrap().unwrap().unwrap());
        }
        (engine, pins)
    }

    /// Writes everything through `slices`/`advance` in pieces of at most `step` bytes (as a
    /// socket taking that many at a time would), compacting the buffer after each.
    fn drain(buf: &mut Vec<u8>, pins: &mut Pins, step: usize) -> Vec<u8> {
        let (mut wpos, mut sent) = (0, Vec::new());
        while buf.len() - wpos + pins.bytes() > 0 {
            let [a, b] = pins.slices(buf, wpos, step);
            assert!(!a.is_empty() || !b.is_empty(), "progress");
            // The socket takes a bit more than half of what is offered (a short write).
            let offered = [a, b].concat();
            let n = offered.len() / 2 + 1;
            sent.extend_from_slice(&offered[..n]);
            wpos = pins.advance(wpos, n);
            if wpos > 0 && wpos % 3 == 0 {
                buf.drain(..wpos);
                pins.shift(wpos);
                wpos = 0;
            }
        }
        sent
    }

    #[test]
    fn buffered_and_pinned_bytes_go_out_in_order() {
        let big: Vec<u8> = (0..5000u32).map(|i| i as u8).collect();
        let other = vec![b'x'; 777];
        let (_engine, mut values) = pins_of(&[&big, &other]);
        for step in [1, 7, 64, 1000, 100_000] {
            let (_e, mut v) = pins_of(&[&big, &other]);
            let mut buf = b"VALUE a 0 5000\r\n".to_vec();
            let mut pins = Pins::default();
            pins.push(buf.len(), v.remove(0));
            buf.extend_from_slice(b"\r\nVALUE b 0 777\r\n");
            pins.push(buf.len(), v.remove(0));
            buf.extend_from_slice(b"\r\nEND\r\n");
            let mut expected = b"VALUE a 0 5000\r\n".to_vec();
            expected.extend_from_slice(&big);
            expected.extend_from_slice(b"\r\nVALUE b 0 777\r\n");
            expected.extend_from_slice(&other);
            expected.extend_from_slice(b"\r\nEND\r\n");
            assert_eq!(drain(&mut buf, &mut pins, step), expected, "step {step}");
            assert_eq!(pins.bytes(), 0);
        }
        // A dropped reply takes its values with it; earlier ones stay.
        let mut pins = Pins::default();
        pins.push(4, values.remove(0));
        assert_eq!(pins.bytes(), 5000);
        pins.push(20, values.remove(0));
        pins.truncate(10);
        assert_eq!(pins.bytes(), 5000);
        pins.truncate(4);
        assert_eq!(pins.bytes(), 5000, "a value at the cut stays (its header is before it)");
        pins.truncate(3);
        assert_eq!(pins.bytes(), 0);
    }
}
