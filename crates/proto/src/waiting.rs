//! The keys of one-key GETs waiting whole at the start of a connection's buffer: what a
//! server can start loading from memory before it runs the requests one by one, so that
//! their misses overlap (`docs/design.md`, "Batched lookups"). Each protocol says how one
//! such request reads ([`GetRequest`]); [`WaitingGets`] walks a buffer with it.
//!
//! A hint, not a parse: a key found here may still be refused when its request is parsed
//! (a control byte, a key too long), but none is found that its request does not hold, in
//! order; the fuzz targets check each against the parser.

use std::marker::PhantomData;

/// How one protocol's one-key GET reads at the start of a buffer.
pub trait GetRequest {
    /// The key of the GET whole at the start of `buf` and the bytes after that request; `None`
    /// where `buf` starts with anything else or the request has not all come. It MUST look
    /// at a bounded number of bytes (a request still arriving is looked at again at every
    /// read) and MUST return a key that lies inside the request, with the rest of `buf` after
    /// the request.
    fn next_get(buf: &[u8]) -> Option<(&[u8], &[u8])>;
}

/// The keys of the GETs waiting at the start of a buffer, in order, up to the first request
/// that is anything else or has not all come (`memcache::waiting_get_keys`,
/// `resp::waiting_get_keys`).
#[derive(Debug)]
pub struct WaitingGets<'a, P> {
    rest: &'a [u8],
    protocol: PhantomData<P>,
}

impl<'a, P: GetRequest> WaitingGets<'a, P> {
    /// The keys of the GETs at the start of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        WaitingGets { rest: buf, protocol: PhantomData }
    }

    /// The buffer after the requests whose keys were yielded.
    pub fn remainder(&self) -> &'a [u8] {
        self.rest
    }
}

impl<'a, P: GetRequest> Iterator for WaitingGets<'a, P> {
    type Item = &'a [u8];

    #[inline]
    fn next(&mut self) -> Option<&'a [u8]> {
        let (key, rest) = P::next_get(self.rest)?;
        self.rest = rest;
        Some(key)
    }
}
