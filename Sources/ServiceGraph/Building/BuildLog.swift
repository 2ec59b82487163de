/// What a build notes as it goes: how long each service took (the creation order is the core's
/// ``_GraphCore/creationOrder``).
struct BuildLog: Sendable {
    /// Each factory that took a microsecond or more, with how long it took, in the order they ended:
    /// most synchronous factories take less (they count as zero), so a large graph keeps nothing for
    /// them, and noting one is an append (8 bytes), not a hash (a graph whose factories are all slow,
    /// as under a profiler, would otherwise hash every slot).
    private(set) var slowFactories: [(slot: Int32, microseconds: Int32)] = []
    /// How long each `didAdd` took in microseconds, by slot: few services have hooks, so this is
    /// not a per-slot array.
    var didAddMicroseconds: [Int: Int32] = [:]
    /// Services whose `didAdd` succeeded, in the order they started.
    var started: [StartedService] = []
    /// The singletons the build made that hand out an instance another one runs the hooks of: empty
    /// unless an instance is provided under several keys.
    var aliases: [HookAlias] = []
    /// Wall-clock time of the whole build.
    var totalDuration: Duration = .zero

    /// Notes the time of the factory of `slot`, which the build created.
    mutating func noteFactory(_ slot: Int, took duration: Duration) {
        guard duration >= Self.microsecond else { return }
        slowFactories.append((Int32(truncatingIfNeeded: slot), Int32(clamping: duration.wholeMicroseconds)))
    }

    private static let microsecond = Duration.microseconds(1)

    /// How long the factory of each service the build created took (to the microsecond), by slot:
    /// made once per report, then read per service.
    func factoryDurations() -> FactoryDurations {
        FactoryDurations(
            bySlot: Dictionary(slowFactories.lazy.map { (Int($0.slot), $0.microseconds) }) { _, last in last }
        )
    }

    /// See ``factoryDurations()``.
    struct FactoryDurations {
        fileprivate let bySlot: [Int: Int32]

        /// The factory time of `slot`, a service the build created.
        subscript(slot: Int) -> Duration { .microseconds(bySlot[slot] ?? 0) }
    }

    func didAddDuration(_ slot: Int) -> Duration? {
        didAddMicroseconds[slot].map { .microseconds($0) }
    }
}
