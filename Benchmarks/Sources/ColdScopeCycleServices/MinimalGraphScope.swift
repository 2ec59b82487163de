import Synchronization

/// The least a container's request scope must do beyond ``HandWrittenRequestScope``, written by hand:
/// the yardstick for the graph's cycle in `Scripts/cold_scope_cycle.sh` (mode `minimal`).
///
/// What it does that the hand-written scope does not, as the graph must: the scope is registered with
/// its container under the container's lock (a shutdown must find and close it), the caller holds a
/// handle whose end closes it, the seeds are boxed (a container holds values of any type), the service
/// is made by a type-erased factory from a table and published with a compare-and-exchange, a resolve
/// is counted in flight, and the close releases the values newest first and unregisters the scope. The
/// same four allocations as the graph's cycle. What it leaves out (kinds, hooks, asynchronous factories,
/// waiting creations, child scopes, events, errors with paths) is what the graph's cycle may add to it.
public final class MinimalGraph: Sendable {
    struct State {
        var isShutDown = false
        var scopes: [MinimalScopeBody?] = []
        var freePlaces: [Int] = []
    }

    let state = Mutex(State())
    let singletons: [AnyObject & Sendable]
    let factories: [@Sendable (MinimalScopeBody) -> AnyObject & Sendable]

    public init(repository: SignupRepository) {
        singletons = [repository]
        factories = [
            { scope in
                let repository = unsafeDowncast(scope.container.singletons[0], to: SignupRepository.self)
                let logger = unsafeDowncast(scope.value(at: 0)!, to: MinimalBox<RequestLogger>.self).value
                return SignupService(repository: repository, logger: logger)
            }
        ]
    }

    /// Opens a scope seeded with a request's logger.
    @inline(never)
    public func makeScope(logger: RequestLogger) throws -> MinimalScope {
        let body = MinimalScopeBody(container: self, seed: MinimalBox(logger))
        try state.withLock { state in
            guard !state.isShutDown else { throw MinimalScopeClosed() }
            if let place = state.freePlaces.popLast() {
                body.place = place
                state.scopes[place] = body
            } else {
                body.place = state.scopes.count
                state.scopes.append(body)
            }
        }
        return MinimalScope(body)
    }
}

/// A value that is not a class instance, as the container holds it.
final class MinimalBox<Value: Sendable>: Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

struct MinimalScopeClosed: Error {}

/// The scope: its cells (slot 0 the logger, 1 the service), registered with its
/// container while open.
public final class MinimalScopeBody: @unchecked Sendable {
    let container: MinimalGraph
    /// Where the container keeps it; written under the container's lock before anyone has the scope.
    var place = 0
    private let inFlight = Atomic<Int>(0)
    private let isClosed = Atomic<Bool>(false)
    private let logger = Atomic<Unmanaged<AnyObject>?>(nil)
    private let service = Atomic<Unmanaged<AnyObject>?>(nil)

    init(container: MinimalGraph, seed logger: AnyObject & Sendable) {
        self.container = container
        self.logger.store(Unmanaged.passRetained(logger), ordering: .releasing)
    }

    func value(at slot: Int) -> AnyObject? {
        (slot == 0 ? logger.load(ordering: .acquiring) : service.load(ordering: .acquiring))?.takeUnretainedValue()
    }

    /// The scoped service at `slot` (1), made by the first call.
    @inline(never)
    func resolve(_ slot: Int) throws -> AnyObject {
        inFlight.wrappingAdd(1, ordering: .acquiring)
        defer { inFlight.wrappingSubtract(1, ordering: .releasing) }
        guard !isClosed.load(ordering: .relaxed) else { throw MinimalScopeClosed() }
        if let made = value(at: slot) { return made }
        let made = container.factories[slot - 1](self)
        let (exchanged, original) = service.compareExchange(
            expected: nil,
            desired: Unmanaged.passRetained(made),
            ordering: .acquiringAndReleasing
        )
        if exchanged { return made }
        Unmanaged.passUnretained(made).release()
        return original.unsafelyUnwrapped.takeUnretainedValue()
    }

    /// Releases the values, newest first, and unregisters the scope; once.
    @inline(never)
    public func close() {
        guard !isClosed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        service.exchange(nil, ordering: .acquiringAndReleasing)?.release()
        logger.exchange(nil, ordering: .acquiringAndReleasing)?.release()
        // Let go of outside the lock.
        let registered = container.state.withLock { state -> MinimalScopeBody? in
            defer {
                state.scopes[place] = nil
                state.freePlaces.append(place)
            }
            return state.scopes[place]
        }
        _ = registered
    }
}

/// The caller's handle: its end closes the scope.
public final class MinimalScope: Sendable {
    public let body: MinimalScopeBody

    init(_ body: MinimalScopeBody) { self.body = body }

    deinit { body.close() }

    public func signupService() throws -> SignupService {
        unsafeDowncast(try body.resolve(1), to: SignupService.self)
    }
}
