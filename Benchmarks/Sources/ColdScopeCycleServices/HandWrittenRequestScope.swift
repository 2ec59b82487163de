import Synchronization

/// The same request scope written by hand, as a server without a graph would: one object per request
/// holding its seed (the request's logger), its scoped service made on first use under a lock and released with the object.
/// The floor for the graph's cycle in `Scripts/cold_scope_cycle.sh`: what any request scope pays.
public final class HandWrittenRequestScope: Sendable {
    public let logger: RequestLogger
    private let repository: SignupRepository
    private let service = Mutex<SignupService?>(nil)

    /// Out of line, as a server's scope escapes into its request's context: inlined into the cycle, the
    /// object would be put on the stack.
    @inline(never)
    public init(logger: RequestLogger, repository: SignupRepository) {
        self.logger = logger
        self.repository = repository
    }

    /// The request's service, made by the first call.
    public func signupService() -> SignupService {
        service.withLock { service in
            if let service { return service }
            let made = SignupService(repository: repository, logger: logger)
            service = made
            return made
        }
    }
}
