//! The schedule half of the store port, passed through unchanged by the tests' agent-store
//! decorators (counting, lost answers, injected faults), which are about agent records.

/// `impl ScheduleStore for $ty` by delegating to `self.$field`, counting each call with
/// `$count(self)` (an expression run before the call).
#[macro_export]
macro_rules! schedule_store_via {
    ($ty:ty, $field:ident, $count:expr, $($generics:tt)*) => {
        impl $($generics)* snapwake::store::ScheduleStore for $ty {
            fn get_schedule(
                &self,
                key: &snapwake::domain::AgentKey,
            ) -> impl std::future::Future<
                Output = Result<Option<snapwake::domain::ScheduleRecord>, snapwake::store::StoreError>,
            > + Send {
                ($count)(self);
                self.$field.get_schedule(key)
            }
            fn put_schedule(
                &self,
                record: &snapwake::domain::ScheduleRecord,
                expected_version: u64,
            ) -> impl std::future::Future<
                Output = Result<snapwake::domain::ScheduleRecord, snapwake::store::StoreError>,
            > + Send {
                ($count)(self);
                self.$field.put_schedule(record, expected_version)
            }
            fn delete_schedule(
                &self,
                key: &snapwake::domain::AgentKey,
            ) -> impl std::future::Future<Output = Result<(), snapwake::store::StoreError>> + Send
            {
                ($count)(self);
                self.$field.delete_schedule(key)
            }
            fn due_schedules(
                &self,
                until_ms: u64,
                limit: u32,
                after: Option<&snapwake::store::DueCursor>,
            ) -> impl std::future::Future<
                Output = Result<snapwake::store::DuePage, snapwake::store::StoreError>,
            > + Send {
                ($count)(self);
                self.$field.due_schedules(until_ms, limit, after)
            }
        }
    };
}
