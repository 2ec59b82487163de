/// Why a ``GraphServiceGroup`` refused to start or stopped, naming the service by its graph key.
public struct GraphLifecycleError: Error, CustomStringConvertible, Sendable {
    public enum Reason: Sendable {
        /// The service's `run()` threw.
        case failed(any Error)
        /// The service's `run()` returned before the group was shut down.
        case exitedEarly
        /// The service stopped before it said it was running (``RunningGate``).
        case stoppedBeforeRunning
        /// A service it needs running (``NeedsRunningServices``) stopped before it was running, for the
        /// reason given.
        indirect case neededServiceStopped(String, cause: GraphLifecycleError)
        /// A service it needs running did not say so within the readiness timeout.
        case neededServiceNotRunningInTime(String, Duration)
        /// It needs a service running that the group does not run, or starts after it.
        case needsServiceOutOfOrder(String)
    }

    /// The service's key name (or the server's name).
    public let service: String
    public let reason: Reason

    public var description: String {
        switch reason {
        case .failed(let error): "\(service) failed: \(error)"
        case .exitedEarly: "\(service) stopped running before the service group was shut down"
        case .stoppedBeforeRunning: "\(service) stopped before it was running"
        case .neededServiceStopped(let needed, let cause):
            "\(service) needs \(needed) running, but \(needed) stopped before it was running (\(cause))"
        case .neededServiceNotRunningInTime(let needed, let timeout):
            "\(service) needs \(needed) running, but \(needed) was not running after \(timeout)"
        case .needsServiceOutOfOrder(let needed):
            "\(service) needs \(needed) running, but \(needed) is not a service the group starts before it "
                + "(a singleton of the graph created before it, such as one it depends on)"
        }
    }
}

/// Everything that went wrong in one run: the service group's failure, then the graph's shutdown's.
public struct GraphServiceGroupFailure: Error, CustomStringConvertible, Sendable {
    public let errors: [any Error]

    public var description: String {
        errors.map { "\($0)" }.joined(separator: "\n")
    }
}

/// ``GraphServiceGroup/run()`` was called again: a group runs its services once, and shuts its graph
/// down once.
public struct GraphServiceGroupMisuse: Error, CustomStringConvertible, Sendable {
    public var description: String { "GraphServiceGroup.run() was already called: a group runs once" }
}
