//! The store's one retry loop. Every call a request or the change stream makes runs through
//! [`with_context`]: single reads, batch reads (an answer that leaves keys unprocessed is a
//! transient failure whose next attempt asks for those keys only), transactions (whose client
//! request token the context carries from one attempt to the next) and stream reads. The
//! table lifecycle calls (describe, create, update) are not retried: `/readyz` and start-up
//! report what the store answers at once, and `migrate` stops on the first failure.
//!
//! Policy: transient failures ([`StoreError::is_transient`]: throttling, transaction
//! conflicts, timeouts and 5xx answers) are retried at most [`RETRY_ATTEMPTS`] times, after
//! exponential pauses from 10 ms doubling up to 500 ms, each stretched by a random part of up
//! to its own length so that clients that failed together do not retry together. Anything
//! else answers at once.
//!
//! The loop is `backon`'s: its context-carrying retry fits calls whose next attempt depends
//! on what the last one left, and it sleeps on tokio's timer.

use std::time::Duration;

use backon::{ExponentialBuilder, RetryableWithContext};

use super::error::StoreError;

/// How many times a transient failure or partial answer is retried before giving up.
pub const RETRY_ATTEMPTS: u32 = 8;
const RETRY_BASE: Duration = Duration::from_millis(10);
const RETRY_CAP: Duration = Duration::from_millis(500);

fn policy() -> ExponentialBuilder {
    ExponentialBuilder::new()
        .with_min_delay(RETRY_BASE)
        .with_max_delay(RETRY_CAP)
        .with_max_times(RETRY_ATTEMPTS as usize)
        .with_jitter()
}

/// Runs `call` until it answers, fails for good, or has been retried [`RETRY_ATTEMPTS`]
/// times. Each attempt gets the context the last one handed back (what is left to read, the
/// token to send), and the last attempt's context comes back with its answer.
pub(super) async fn with_context<C, T, F, Fut>(context: C, call: F) -> (C, Result<T, StoreError>)
where
    F: FnMut(C) -> Fut,
    Fut: Future<Output = (C, Result<T, StoreError>)>,
{
    under(policy(), context, call).await
}

async fn under<C, T, F, Fut>(
    policy: ExponentialBuilder,
    context: C,
    call: F,
) -> (C, Result<T, StoreError>)
where
    F: FnMut(C) -> Fut,
    Fut: Future<Output = (C, Result<T, StoreError>)>,
{
    // On the heap: the loop holds an SDK call's future and a timer, some 16 KiB, which would
    // otherwise be inlined into every caller's future (clippy's large_futures).
    Box::pin(
        call.retry(policy)
            .context(context)
            .when(StoreError::is_transient),
    )
    .await
}

/// [`with_context`] for a call that carries nothing from one attempt to the next.
pub(super) async fn call<T, F, Fut>(mut call: F) -> Result<T, StoreError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, StoreError>>,
{
    let attempt = |()| {
        let answer = call();
        async move { ((), answer.await) }
    };
    with_context((), attempt).await.1
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;

    /// The policy's budget of attempts, without its pauses.
    fn unpaused() -> ExponentialBuilder {
        policy()
            .with_min_delay(Duration::ZERO)
            .with_max_delay(Duration::ZERO)
    }

    async fn attempts_of(failure: fn() -> StoreError) -> (u32, Result<(), StoreError>) {
        let attempts = AtomicU32::new(0);
        let ((), answer) = under(unpaused(), (), |()| async {
            attempts.fetch_add(1, Ordering::SeqCst);
            ((), Err(failure()))
        })
        .await;
        (attempts.load(Ordering::SeqCst), answer)
    }

    #[tokio::test]
    async fn a_transient_failure_is_retried_until_the_budget_is_spent() {
        let (attempts, answer) = attempts_of(|| StoreError::TransactionConflict).await;
        assert!(matches!(answer, Err(StoreError::TransactionConflict)));
        assert_eq!(attempts, RETRY_ATTEMPTS + 1);
    }

    #[tokio::test]
    async fn a_definite_failure_answers_at_once() {
        let (attempts, answer) = attempts_of(|| StoreError::Validation("no".into())).await;
        assert!(matches!(answer, Err(StoreError::Validation(_))));
        assert_eq!(attempts, 1);
    }

    #[tokio::test]
    async fn each_attempt_gets_what_the_last_one_left() {
        // Three keys to read, one answered per attempt: the context shrinks to nothing.
        let (left, answer) = under(unpaused(), vec![1, 2, 3], |mut left: Vec<u32>| async move {
            left.pop();
            if left.is_empty() {
                (left, Ok(()))
            } else {
                (left, Err(StoreError::Throttled("unprocessed".into())))
            }
        })
        .await;
        assert!(answer.is_ok());
        assert!(left.is_empty());
    }
}
