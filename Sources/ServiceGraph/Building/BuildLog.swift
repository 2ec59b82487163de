/// What a build notes as it goes: how long each service took (the creation order is the core's
/// ``_GraphCore/creationOrder``).
struct BuildLog: Sendable {
    /// Per slot, how long the factory took in microseconds (-1 for services the build did not create).
    var factoryMicroseconds: [Int32]
    /// How long each `didAdd` took in microseconds, by slot: few services have hooks, so this is
    /// not a per-slot array.
    var didAddMicroseconds: [Int: Int32] = [:]
    /// Services whose `didAdd` succeeded, in the order they started.
    var started: [StartedService] = []
    /// Wall-clock time of the whole build.
    var totalDuration: Duration = .zero

    init(count: Int) {
        factoryMicroseconds = Array(repeating: -1, count: count)
    }

    func factoryDuration(_ slot: Int) -> Duration? {
        factoryMicroseconds[slot] < 0 ? nil : .microseconds(factoryMicroseconds[slot])
    }

    func didAddDuration(_ slot: Int) -> Duration? {
        didAddMicroseconds[slot].map { .microseconds($0) }
    }
}
