//! WebSockets that wait for `connection_init`, held to a number.
//!
//! Credentials come in `connection_init`, after the upgrade, so the upgrade itself cannot be
//! refused for want of them: a client may open sockets and never initialise them. Each is
//! closed after 10 s (`4408`); meanwhile at most `--max-pending-sockets` wait, and a socket
//! upgraded past that closes the one that has waited longest, also with `4408`, which
//! graphql-ws clients retry. A socket leaves the waiting ones when its `connection_init`
//! arrives.
//!
//! Invariant: at most `max` sockets are waiting and not yet told to close.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::Notify;

/// The sockets waiting for `connection_init`, oldest first.
pub(super) struct PendingSockets {
    max: usize,
    waiting: Mutex<VecDeque<(u64, Arc<Notify>)>>,
    next: AtomicU64,
}

impl PendingSockets {
    pub(super) fn new(max: usize) -> Arc<PendingSockets> {
        Arc::new(PendingSockets {
            max: max.max(1),
            waiting: Mutex::new(VecDeque::new()),
            next: AtomicU64::new(0),
        })
    }

    /// Registers a socket just upgraded; past the limit, the oldest waiting socket is told to
    /// close.
    pub(super) fn enter(self: &Arc<Self>) -> Waiting {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let evicted = Arc::new(Notify::new());
        let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        waiting.push_back((id, Arc::clone(&evicted)));
        while waiting.len() > self.max {
            if let Some((_, oldest)) = waiting.pop_front() {
                oldest.notify_one();
            }
        }
        Waiting {
            id,
            evicted,
            sockets: Arc::clone(self),
            initialised: std::sync::atomic::AtomicBool::new(false),
        }
    }

    fn leave(&self, id: u64) {
        let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        waiting.retain(|(waiting_id, _)| *waiting_id != id);
    }

    #[cfg(test)]
    fn count(&self) -> usize {
        self.waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

/// One socket's place among those waiting; given up when its `connection_init` arrives or it
/// is dropped.
pub(super) struct Waiting {
    id: u64,
    evicted: Arc<Notify>,
    sockets: Arc<PendingSockets>,
    /// Its `connection_init` arrived: an eviction that crossed it is void.
    initialised: std::sync::atomic::AtomicBool,
}

impl Waiting {
    /// Resolves when this socket must close to make room for newer ones; never once its
    /// `connection_init` arrived.
    pub(super) async fn evicted(&self) {
        self.evicted.notified().await;
        if self.initialised.load(Ordering::Acquire) {
            std::future::pending::<()>().await;
        }
    }

    /// Its `connection_init` arrived: it no longer waits.
    pub(super) fn initialised(&self) {
        self.initialised.store(true, Ordering::Release);
        self.sockets.leave(self.id);
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        self.sockets.leave(self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn past_the_limit_the_oldest_waiting_socket_is_told_to_close() {
        let sockets = PendingSockets::new(2);
        let first = sockets.enter();
        let second = sockets.enter();
        second.initialised();
        let third = sockets.enter();
        let fourth = sockets.enter();
        // The first had waited longest; the second no longer waits.
        first.evicted().await;
        assert_eq!(sockets.count(), 2);
        drop(third);
        assert_eq!(sockets.count(), 1);
        drop(fourth);
        assert_eq!(sockets.count(), 0);
    }
}
