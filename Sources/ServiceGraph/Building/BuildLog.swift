/// What a build notes as it goes: how long each service took (the creation order is the core's
/// ``_GraphCore/creationOrder``).
struct BuildLog: Sendable {
    /// How long each factory that took a microsecond or more ran, in microseconds, by slot: most
    /// synchronous factories take less (they count as zero), so a large graph keeps nothing per
    /// service for them. (A graph whose factories are mostly slow keeps about 20 bytes for each, where
    /// a per-slot array would keep 4 bytes for every service.)
    var slowFactoryMicroseconds: [Int: Int32] = [:]
    /// How long each `didAdd` took in microseconds, by slot: few services have hooks, so this is
    /// not a per-slot array.
    var didAddMicroseconds: [Int: Int32] = [:]
    /// Services whose `didAdd` succeeded, in the order they started.
    var started: [StartedService] = []
    /// Wall-clock time of the whole build.
    var totalDuration: Duration = .zero

    /// How long the factory of `slot`, a service the build created, took (to the microsecond).
    func factoryDuration(_ slot: Int) -> Duration {
        .microseconds(slowFactoryMicroseconds[slot] ?? 0)
    }

    func didAddDuration(_ slot: Int) -> Duration? {
        didAddMicroseconds[slot].map { .microseconds($0) }
    }
}
