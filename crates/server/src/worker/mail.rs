//! A worker's share of pub/sub and client-side caching: delivering what other threads left
//! in its mailbox (see `crate::pubsub`), and forgetting a closing connection's
//! subscriptions and tracking.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use fridge_proto::resp;
use mio::Poll;

use super::{Conn, Loop};
use crate::pubsub::Frame;

impl Loop {
    /// Forgets a closing connection's subscriptions.
    pub(super) fn unsubscribe(&self, c: &mut Conn) {
        let (shared, id) = (&*self.shared, c.session.id);
        if let Some(subs) = c.session.pubsub.as_mut() {
            subs.clear(id, &shared.pubsub);
        }
        if c.session.tracking.take().is_some() {
            shared.tracking.disable(id);
            crate::notify::update_engine_events(shared);
        }
        // Connections redirecting their invalidations here are told it has gone.
        shared.tracking.closed(id);
    }

    /// Appends the pub/sub messages other workers (and this one) left in this worker's
    /// mailbox to their connections' output buffers, and queues those connections to
    /// write. A connection in the middle of a reply written in steps gets its messages
    /// after it (they wait in `held`). A subscriber past `max_pubsub_output` — messages
    /// were dropped for it, or its unsent bytes are over the limit — is disconnected.
    pub(super) fn deliver_mail(&mut self, poll: &Poll) {
        let shared = Arc::clone(&self.shared);
        let hub = &shared.pubsub;
        let mut mail = std::mem::take(&mut self.mail);
        if !hub.take_mail(self.index, &mut mail) && self.held.is_empty() {
            self.mail = mail;
            return;
        }
        let mut over = Vec::new();
        let held = std::mem::take(&mut self.held);
        for d in held.into_iter().chain(mail.drain(..)) {
            let Some(Some(c)) = self.conns.get_mut(d.slot) else { continue };
            if c.session.id != d.id {
                continue;
            }
            // A parked command has written nothing yet: messages go out meanwhile.
            if c.session.resume.resuming && !c.session.resume.parked {
                self.held.push(d);
                continue;
            }
            let pending = &c.session.pending;
            pending.queued.fetch_sub(d.len(), Ordering::Relaxed);
            let resp3 = c.session.version == resp::Version::Resp3;
            // RESP2 takes invalidations only as pub/sub messages (Redis's `sendTrackingMessage`).
            let deaf = d.frame == Frame::Invalidate && !resp3 && !c.session.subscribed()
                || d.frame == Frame::RedirectBroken && !resp3
                || !d.still_wanted(c.session.pubsub.as_deref());
            if !d.is_marker() && !deaf {
                d.write(&mut c.wbuf, resp3);
            }
            if pending.overflowed.load(Ordering::Relaxed) || c.pending_out() > hub.limit {
                if !over.contains(&d.slot) {
                    over.push(d.slot);
                }
            } else if !c.queued {
                c.queued = true;
                self.queue.push_back(d.slot);
            }
        }
        self.mail = mail;
        for t in over {
            hub.disconnections.fetch_add(1, Ordering::Relaxed);
            self.close(poll, t);
        }
    }
}
