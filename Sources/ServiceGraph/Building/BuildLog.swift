/// What a build notes as it goes: how long each service took (the creation order is the core's
/// ``_GraphCore/creationOrder``).
struct BuildLog: Sendable {
    /// Each factory that took a microsecond or more, with how long it took, in the order they ended:
    /// most synchronous factories take less (they count as zero), so a large graph keeps nothing for
    /// them, and noting one is an append (8 bytes), not a hash (a graph whose factories are all slow,
    /// as under a profiler, would otherwise hash every slot).
    private(set) var slowFactories: [(slot: Int32, microseconds: Int32)] = []
    /// How long each `didAdd` took, in microseconds, in the order they ended: few services have hooks,
    /// so this is not a per-slot array. Of the same type as ``slowFactories`` and not a dictionary:
    /// a log is copied when the build returns, and a dictionary's type, new to a fresh process, would
    /// cost the runtime a scan of every conformance for its key's `Hashable` there.
    private(set) var didAdds: [(slot: Int32, microseconds: Int32)] = []
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

    /// Notes the time of the `didAdd` of `slot`, which the build ran.
    mutating func noteDidAdd(_ slot: Int, took duration: Duration) {
        didAdds.append((Int32(truncatingIfNeeded: slot), Int32(clamping: duration.wholeMicroseconds)))
    }

    private static let microsecond = Duration.microseconds(1)

    /// How long the factory of each service the build created took (to the microsecond), by slot:
    /// made once per report, then read per service. A service not in it took less than a microsecond.
    func factoryDurations() -> Durations { Durations(slowFactories) }

    /// How long the `didAdd` of each service that has one took, by slot: made once per report. A service
    /// not in it has no `didAdd` the build ran.
    func didAddDurations() -> Durations { Durations(didAdds) }

    /// Durations noted by slot, for reading per service (see ``factoryDurations()``).
    struct Durations {
        private let bySlot: [Int: Int32]

        fileprivate init(_ noted: [(slot: Int32, microseconds: Int32)]) {
            bySlot = Dictionary(noted.lazy.map { (Int($0.slot), $0.microseconds) }) { _, last in last }
        }

        /// The duration noted for `slot`; nil when none was.
        subscript(slot: Int) -> Duration? { bySlot[slot].map { .microseconds($0) } }
    }
}
