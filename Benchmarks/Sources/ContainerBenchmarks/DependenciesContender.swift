import Dependencies

// swift-dependencies 1.17: values live in `DependencyValues`, read through `@Dependency`. Its model
// fits singletons (live values) and a transient made from dependencies; a request scope maps to
// `withDependencies`. It has no chain of factories or graph build, so those scenarios skip it.

private enum LoggerDependency: DependencyKey {
    static let liveValue: any Logging = Logger()
}

private enum ClockDependency: DependencyKey {
    static let liveValue = Clock()
}

private enum StoreDependency: DependencyKey {
    static let liveValue = Store()
}

private enum SessionDependency: DependencyKey {
    static let liveValue = Session(logger: Logger())
}

extension DependencyValues {
    var benchLogger: any Logging {
        get { self[LoggerDependency.self] }
        set { self[LoggerDependency.self] = newValue }
    }

    var benchClock: Clock {
        get { self[ClockDependency.self] }
        set { self[ClockDependency.self] = newValue }
    }

    var benchStore: Store {
        get { self[StoreDependency.self] }
        set { self[StoreDependency.self] = newValue }
    }

    var benchSession: Session {
        get { self[SessionDependency.self] }
        set { self[SessionDependency.self] = newValue }
    }
}

/// A type that reads its dependencies the swift-dependencies way.
struct DependenciesReader: Sendable {
    @Dependency(\.benchLogger) var logger
    @Dependency(\.benchClock) var clock
    @Dependency(\.benchStore) var store
    @Dependency(\.benchSession) var session

    func handler() -> Handler {
        Handler(logger: logger, clock: clock, store: store)
    }

    /// Runs `body` with a request's own session, as a per-request scope.
    static func withRequest<T>(_ body: () throws -> T) rethrows -> T {
        try withDependencies {
            $0.benchSession = Session(logger: $0.benchLogger)
        } operation: {
            try body()
        }
    }
}
