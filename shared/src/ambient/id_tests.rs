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
