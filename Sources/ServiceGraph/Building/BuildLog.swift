/// What a build notes as it goes: how long each service took (the creation order is the core's
/// ``_GraphCore/creationOrder``).
struct BuildLog: Sendable {
    /// Per slot, how long the factory took in microseconds (-1 for services the build did not create).
    var factoryMicroseconds: [Int32]
    /// Per slot, how long `didAdd` took in microseconds (-1 when it has no hooks or was not created).
    var didAddMicroseconds: [Int32]
    /// Services whose `didAdd` succeeded, in the order they started.
    var started: [StartedService] = []
    /// Wall-clock time of the whole build.
    var totalDuration: Duration = .zero

    init(count: Int) {
        factoryMicroseconds = Array(repeating: -1, count: count)
        didAddMicroseconds = Array(repeating: -1, count: count)
    }

    func factoryDuration(_ slot: Int) -> Duration? {
        factoryMicroseconds[slot] < 0 ? nil : .microseconds(factoryMicroseconds[slot])
    }

    func didAddDuration(_ slot: Int) -> Duration? {
        didAddMicroseconds[slot] < 0 ? nil : .microseconds(didAddMicroseconds[slot])
    }
}
