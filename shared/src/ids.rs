//! Fresh random ids (v4 UUIDs), except on a thread seeded by [`seed_this_thread`]: ids decide
//! order (keys list in order), so a simulated deployment's seed must draw them to replay its
//! run (docs/testing.md, "One simulated deployment").

use std::cell::RefCell;

thread_local! {
    static SEEDED: RefCell<Option<fastrand::Rng>> = const { RefCell::new(None) };
}

/// From now on, the ids made on this thread are drawn from `seed`, and so are the retry
/// jitter's waits (fastrand's generator of this thread, `crate::agentkit::answer`).
pub fn seed_this_thread(seed: u64) {
    SEEDED.with(|s| *s.borrow_mut() = Some(fastrand::Rng::with_seed(seed)));
    fastrand::seed(seed.rotate_left(32) ^ 0x5eed_5eed);
}

pub fn fresh() -> uuid::Uuid {
    SEEDED.with(|s| match s.borrow_mut().as_mut() {
        Some(rng) => uuid::Builder::from_random_bytes(rng.u128(..).to_le_bytes()).into_uuid(),
        None => uuid::Uuid::new_v4(),
    })
}

/// A fresh v4 UUID as 32 lowercase hex characters.
pub fn fresh_hex() -> String {
    fresh().simple().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seeded_thread_draws_the_same_ids_again_and_others_stay_random() {
        let draw = |seed| {
            std::thread::spawn(move || {
                seed_this_thread(seed);
                (0..3).map(|_| fresh_hex()).collect::<Vec<_>>()
            })
            .join()
            .expect("a thread")
        };
        assert_eq!(draw(7), draw(7));
        assert_ne!(draw(7), draw(8));
        let id = draw(7)[0].clone();
        assert_eq!(
            uuid::Uuid::parse_str(&id).map(|u| u.get_version_num()),
            Ok(4)
        );
        let unseeded = std::thread::spawn(|| (fresh_hex(), fresh_hex()))
            .join()
            .expect("a thread");
        assert_ne!(unseeded.0, unseeded.1);
    }
}
