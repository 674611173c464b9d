//! Reading a big snapshot Tool in time slices side by side (docs/operations.md, *At a million
//! snapshots*): every snapshot once, whatever the way they lie in time — a dense hour, a
//! sparse year, many in one second, some on the very seconds the slices are cut at — and
//! with AgentKit's own 429s on the way.

use super::*;
use snapwake::budget::{AgentKitBudget, BudgetSettings};
use snapwake::domain::Trigger;
use snapwake::index_sync::{snapshots_between, SliceSettings, SlicedRead};
use snapwake::invocation::Invocation;

/// `n` Ready snapshots of one agent each at `at(i)`: their ids.
fn seed_at(world: &World, n: usize, at: impl Fn(usize) -> OffsetDateTime) -> Vec<String> {
    let seeds = (0..n)
        .map(|i| snapshot_seed(&world.recoverable, "alice", &caller::mint("alice"), at(i)))
        .collect();
    world.sim.control().seed_snapshots(seeds).unwrap()
}

async fn read_all(
    world: &World,
    settings: SliceSettings,
    range: (Option<u64>, Option<u64>),
) -> SlicedRead {
    snapshots_between(
        &world.client(),
        REGION,
        &world.recoverable,
        range,
        settings,
        Deadline::after(Duration::from_secs(60)),
    )
    .await
    .unwrap()
}

fn ids(read: &SlicedRead) -> Vec<String> {
    let mut ids: Vec<String> = read
        .snapshots
        .iter()
        .map(|s| s.snapshot_id.clone().unwrap())
        .collect();
    ids.sort();
    ids
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_snapshot_of_a_lopsided_tool_is_read_once_by_slices() {
    let world = World::start(Duration::ZERO).await;
    let now = OffsetDateTime::now_utc().replace_nanosecond(0).unwrap();
    let mut want = Vec::new();
    // A burst: 1,500 in one hour yesterday.
    want.extend(seed_at(&world, 1500, |i| {
        now - DAY + Duration::from_secs(i as u64 * 2)
    }));
    // 300 over the last year.
    want.extend(seed_at(&world, 300, |i| now - DAY * (i as u32 + 2)));
    // 250 in one second: no slice is cut that fine, it is paged through.
    let second = now - DAY * 3 / 2;
    want.extend(seed_at(&world, 250, |_| second));
    want.sort();
    let pages_needed = want.len().div_ceil(100) as u64;

    let one_by_one = read_all(
        &world,
        SliceSettings {
            concurrency: 1,
            ..SliceSettings::default()
        },
        (None, None),
    )
    .await;
    assert_eq!(
        ids(&one_by_one),
        want,
        "each snapshot once, one page at a time"
    );

    world.sim.control().reset_counters();
    let side_by_side = read_all(&world, SliceSettings::default(), (None, None)).await;
    assert_eq!(
        ids(&side_by_side),
        want,
        "each snapshot once, slices side by side"
    );
    assert!(
        side_by_side.slices > 8,
        "the range was cut: {}",
        side_by_side.slices
    );
    assert_eq!(
        world.received("ListSessionSnapshots"),
        side_by_side.calls,
        "every page asked for is counted"
    );
    // Each cut costs the page that showed there was more (and the halves overlap by a
    // second): a bounded price for reading side by side.
    assert!(
        side_by_side.calls <= pages_needed + 3 * side_by_side.slices as u64,
        "{} calls for {pages_needed} pages and {} slices",
        side_by_side.calls,
        side_by_side.slices
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_range_is_read_to_its_bounds_and_a_boundary_second_is_never_missed() {
    // AgentKit does not say whether its time filters include their bound: the same range is
    // read whole under either reading.
    for inclusive in [false, true] {
        let world = World::start(Duration::ZERO).await;
        world.sim.control().set_inclusive_time_filters(inclusive);
        let t0 = OffsetDateTime::now_utc().replace_nanosecond(0).unwrap() - DAY;
        // Several snapshots on each second for 400 s, one of them half a second in (its
        // `CreatedAt` shows the whole second, its filtering sees the half): whatever second a
        // cut falls on holds snapshots of both kinds.
        let all = seed_at(&world, 1200, |i| {
            t0 + Duration::from_secs((i / 3) as u64)
                + Duration::from_millis(500 * (i % 3 == 2) as u64)
        });
        let (after, up_to) = (
            t0.unix_timestamp() as u64 + 100,
            t0.unix_timestamp() as u64 + 300,
        );
        let read = read_all(
            &world,
            SliceSettings {
                concurrency: 4,
                ..SliceSettings::default()
            },
            (Some(after), Some(up_to)),
        )
        .await;
        // Seconds 101..=300 are in; a second either side may be (the bounds' inclusiveness is
        // AgentKit's to decide); nothing further out.
        let got = ids(&read);
        let by_second = |s: std::ops::RangeInclusive<usize>| -> Vec<String> {
            let mut v: Vec<String> = all
                .iter()
                .enumerate()
                .filter(|(i, _)| s.contains(&(i / 3)))
                .map(|(_, id)| id.clone())
                .collect();
            v.sort();
            v
        };
        for id in by_second(101..=300) {
            assert!(
                got.contains(&id),
                "{id} of the range was missed (inclusive: {inclusive})"
            );
        }
        let around = by_second(100..=301);
        for id in &got {
            assert!(
                around.contains(id),
                "{id} is outside the range (inclusive: {inclusive})"
            );
        }
        assert!(read.slices > 1, "cut: {}", read.slices);
        // Each second is read by one slice, or two where a cut falls on it: 600 snapshots
        // (six pages) cost their pages and the cuts' first pages, not a second page per slice.
        assert!(
            read.calls <= 6 + 2 * read.slices as u64,
            "{} calls for 6 pages and {} slices (inclusive: {inclusive})",
            read.calls,
            read.slices
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slices_side_by_side_keep_within_the_accounts_limit_through_the_budget() {
    // ListSessionSnapshots limited to 10 a second across the account; 16 slices at once
    // would send 16 in the first instant. As deployed, each page takes a slot of the
    // deployment's budget (the background lane) first, so they never overrun the limit.
    let limits = snapwake_sim::parse_limits("tools,ListSessionSnapshots=10").unwrap();
    let config = snapwake_sim::SimConfig {
        rate_limits: limits.clone(),
        ..snapwake_sim::SimConfig::default()
    };
    let world = World::start_with(config).await;
    let now = OffsetDateTime::now_utc().replace_nanosecond(0).unwrap();
    let mut want = seed_at(&world, 1500, |i| now - Duration::from_secs(60 * i as u64));
    want.sort();
    let store = dynamo_store("slices-budget").await;
    let budget = AgentKitBudget::new(
        store,
        BudgetSettings {
            limits: limits.clone(),
            ..BudgetSettings::default()
        },
    );
    let client = world.client().with_budget(Arc::new(budget));
    let settings = SliceSettings {
        concurrency: 16,
        ..SliceSettings::default()
    };
    let read = Invocation::background(snapwake_delete::FUNCTION, Trigger::Sweep)
        .run(snapshots_between(
            &client,
            REGION,
            &world.recoverable,
            (None, None),
            settings,
            Deadline::after(Duration::from_secs(60)),
        ))
        .await
        .unwrap();
    assert_eq!(ids(&read), want);
    let counted = world.sim.control().counters().limit("ListSessionSnapshots");
    // Slots leave on time but may reach AgentKit a little early or late on a loaded machine
    // (see agentkit_client/budget.rs): the refusals stay rare, and the client asks again.
    assert!(counted.refused <= 2, "{counted:?}");
    assert!(counted.most_in_a_second <= 10, "{counted:?}");
}
