/// Every problem ServiceGraph found in one operation, each with the key, the dependency path and the
/// place where the offending provider was registered.
///
/// Validation reports all problems of a graph at once, so a single error may carry several
/// ``Problem``s. Match on ``Problem/code`` (an opaque, extensible code) rather than on the message:
///
/// ```swift
/// do {
///     try builder.validate()
/// } catch let error as ServiceGraphError {
///     for problem in error.problems where problem.code == .cycle { print(problem.path) }
/// }
/// ```
public struct ServiceGraphError: Error, Sendable, CustomStringConvertible {
    /// The problems found, in a stable order. Never empty.
    public let problems: [Problem]
    /// The graph the problems are about, for ``dump(_:)``.
    let snapshot: GraphSnapshot?

    init(_ problems: [Problem], snapshot: GraphSnapshot? = nil) {
        precondition(!problems.isEmpty, "a ServiceGraphError needs at least one problem")
        self.problems = problems
        self.snapshot = snapshot
    }

    @usableFromInline
    init(_ problem: Problem) {
        self.problems = [problem]
        self.snapshot = nil
    }

    /// The code of each problem, in the order of ``problems``.
    ///
    /// An error from resolving or building carries one problem; one from validation may carry
    /// several. Compare the whole list (`error.codes == [.cycle]`) or ask ``contains(_:)``.
    public var codes: [Code] { problems.map(\.code) }

    /// Whether any problem has the given code.
    public func contains(_ code: Code) -> Bool {
        problems.contains { $0.code == code }
    }

    public var description: String {
        if problems.count == 1 { return "ServiceGraph: \(problems[0])" }
        var text = "ServiceGraph found \(problems.count) problems:"
        for (index, problem) in problems.enumerated() {
            text += "\n  \(index + 1). \(problem)"
        }
        return text
    }
}

extension ServiceGraphError {
    /// Thrown by the synchronous thunk of an asynchronous factory; the resolve path checks first, so
    /// this only guards against misuse of internals.
    @usableFromInline
    static func _asynchronousFactory(_ value: Any.Type) -> ServiceGraphError {
        let name = TypeName.display(value)
        return ServiceGraphError(
            .init(.requiresAwait, key: name, message: "a factory of \(name) is async; use `try await resolve`")
        )
    }
}

extension ServiceGraphError {
    /// Thrown by the factory of a seed, which only a scope made without its value could reach:
    /// ``ServiceGraph/makeScope(seeding:)-(ScopeSeed...)`` refuses such a scope first, so this only guards internals.
    static func seedNotGiven(_ name: String) -> ServiceGraphError {
        ServiceGraphError(
            .init(
                .missingSeed,
                key: name,
                message: "\(name) is a seed: its value is given to each scope by makeScope(seeding:)"
            )
        )
    }
}

extension ServiceGraphError {
    /// What kind of problem was found. New codes may be added without breaking existing code.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case missingProvider = "missing provider"
            case cycle = "cycle"
            case duplicateProvider = "duplicate provider"
            case captiveDependency = "captive dependency"
            case overrideOfUnknownKey = "override of unknown key"
            case factoryFailed = "factory failed"
            case didAddFailed = "didAdd failed"
            case willRemoveFailed = "willRemove failed"
            case hookTimedOut = "hook timed out"
            case buildCancelled = "build cancelled"
            case keyNotFound = "key not found"
            case wrongLifetime = "wrong lifetime"
            case requiresAwait = "requires await"
            case scopeClosed = "scope closed"
            case graphShutDown = "graph shut down"
            case factoryTimedOut = "factory timed out"
            case reentrantResolution = "re-entrant resolution"
            case missingSeed = "missing seed"
            case unexpectedSeed = "unexpected seed"
            case duplicateSeed = "duplicate seed"
            case ownedSeedInUse = "owned seed in use"
            case invalidKey = "invalid key"
            case wrongScopeKind = "wrong scope kind"
            case contradictoryOrder = "contradictory order"
            case unknownContribution = "unknown contribution"
            case privateDependency = "private dependency"
            case unsupported = "unsupported"
        }

        private let base: Base

        private init(_ base: Base) {
            self.base = base
        }

        public var description: String { base.rawValue }

        /// A service depends on a key that no provider provides.
        public static let missingProvider = Code(.missingProvider)
        /// Services depend on each other in a circle.
        public static let cycle = Code(.cycle)
        /// Two providers provide the same key.
        public static let duplicateProvider = Code(.duplicateProvider)
        /// A longer-lived service depends on a shorter-lived one (a singleton on a scoped service, say).
        public static let captiveDependency = Code(.captiveDependency)
        /// An override names a key that was never provided.
        public static let overrideOfUnknownKey = Code(.overrideOfUnknownKey)
        /// A factory threw while the graph built or resolved a service.
        public static let factoryFailed = Code(.factoryFailed)
        /// A service's ``LifecycleHooks/didAdd()`` threw.
        public static let didAddFailed = Code(.didAddFailed)
        /// A service's ``LifecycleHooks/willRemove()`` threw.
        public static let willRemoveFailed = Code(.willRemoveFailed)
        /// A lifecycle hook did not finish within the configured timeout.
        public static let hookTimedOut = Code(.hookTimedOut)
        /// The task running the build was cancelled.
        public static let buildCancelled = Code(.buildCancelled)
        /// A key that is not in the graph was asked for.
        public static let keyNotFound = Code(.keyNotFound)
        /// A service was asked for in a way its lifetime does not allow (a scoped one outside a scope).
        public static let wrongLifetime = Code(.wrongLifetime)
        /// A service with an asynchronous factory was resolved synchronously.
        public static let requiresAwait = Code(.requiresAwait)
        /// A closed scope was asked for a service, or closed again.
        public static let scopeClosed = Code(.scopeClosed)
        /// A graph that was shut down was asked for a service.
        public static let graphShutDown = Code(.graphShutDown)
        /// An asynchronous factory did not finish within ``ServiceGraph/Builder/factoryTimeout``.
        public static let factoryTimedOut = Code(.factoryTimedOut)
        /// A factory asked the graph (or a scope) for the service it is making, directly or through
        /// other services: at run time, a cycle the declared dependencies do not show. Also a factory or
        /// `didAdd` hook closing the scope it is making an instance of, or a transient in.
        public static let reentrantResolution = Code(.reentrantResolution)
        /// A scope was made without the value of a key the builder declared as a seed
        /// (``ServiceGraph/Builder/seed(_:fileID:line:)``).
        public static let missingSeed = Code(.missingSeed)
        /// A scope was given a value for a key that is not one of the graph's seeds.
        public static let unexpectedSeed = Code(.unexpectedSeed)
        /// A scope was given two values for one seed.
        public static let duplicateSeed = Code(.duplicateSeed)
        /// A scope was given a seed to own whose instance the graph or another open scope already owns.
        public static let ownedSeedInUse = Code(.ownedSeedInUse)
        /// A provider provides a wrapper (`AnalyticsKey?`, which names an optional dependency) instead of
        /// a key.
        public static let invalidKey = Code(.invalidKey)
        /// A service needs a kind of scope (``ScopeKind``) it cannot have where it is: a scope opened from
        /// the wrong place, a service resolved from a scope of another kind, or a transient that needs
        /// two kinds of scope neither of which is inside the other.
        public static let wrongScopeKind = Code(.wrongScopeKind)
        /// The `before` and `after` of a list's contributions (``ContributionKey``) contradict each other:
        /// some contribution would have to come before itself.
        public static let contradictoryOrder = Code(.contradictoryOrder)
        /// A contribution's `before` or `after`, or an `overrideContribution`, names an id no contribution
        /// to that list has.
        public static let unknownContribution = Code(.unknownContribution)
        /// A service outside a module (``GraphModule``) depends on a key the module keeps private.
        public static let privateDependency = Code(.privateDependency)
        /// A call the library does not support with what it was given: a ``LiveGraph`` made from a
        /// child graph's builder, say. The message says what to do instead.
        public static let unsupported = Code(.unsupported)
    }

    /// One problem: what went wrong, for which key, along which dependency path, registered where.
    public struct Problem: Sendable, CustomStringConvertible {
        /// What kind of problem this is.
        public let code: Code
        /// The key the problem is about (the missing key, the failing service, ...).
        public let key: String
        /// The dependency path that leads to the problem, from a root of the graph (`App → Signup →
        /// Database`); for a cycle, the cycle itself, its first key repeated at the end.
        ///
        /// - Complexity: O(*n*) in the length of the path: a failure that came out of a chain of
        ///   factories names the services it passed through when the path is read.
        public var path: [String] {
            guard let prefix else { return tail }
            return prefix.names + tail
        }
        /// Where the offending provider was registered, when there is one.
        public let site: RegistrationSite?
        /// The message written for a person, without the path and site (``description`` adds them).
        ///
        /// For a key that is not in the graph, the message names the closest keys that are; they are
        /// looked for the first time the message is read, not when the error is thrown.
        public var message: String { deferredMessage?.text ?? writtenMessage }
        private let writtenMessage: String
        /// A message written on first read instead (see ``DeferredMessage``).
        private let deferredMessage: DeferredMessage?
        /// The error a factory or hook threw, when the problem is one.
        public let underlyingError: (any Error)?
        /// The end of ``path``, as the problem was found.
        private let tail: [String]
        /// The services a failure passed through on its way out of a chain, in front of `tail`.
        private let prefix: PathPrefix?

        init(
            _ code: Code,
            key: String,
            path: [String] = [],
            site: RegistrationSite? = nil,
            message: String,
            underlyingError: (any Error)? = nil
        ) {
            self.code = code
            self.key = key
            self.tail = path
            self.prefix = nil
            self.site = site
            self.writtenMessage = message
            self.deferredMessage = nil
            self.underlyingError = underlyingError
        }

        /// This problem as seen from the factory of `service`, which it came out of: `service` in front
        /// of the path (a problem without a path first gets its own key as the path).
        ///
        /// - Complexity: O(1).
        func prepending(_ service: any ServiceKey.Type) -> Problem {
            Problem(
                copying: self,
                prefix: PathPrefix(service, before: prefix),
                tail: prefix == nil && tail.isEmpty ? [key] : tail
            )
        }

        private init(copying problem: Problem, prefix: PathPrefix?, tail: [String]) {
            self.code = problem.code
            self.key = problem.key
            self.site = problem.site
            self.writtenMessage = problem.writtenMessage
            self.deferredMessage = problem.deferredMessage
            self.underlyingError = problem.underlyingError
            self.prefix = prefix
            self.tail = tail
        }

        /// A problem whose message is written only when it is read.
        init(
            _ code: Code,
            key: String,
            path: [String] = [],
            site: RegistrationSite? = nil,
            deferredMessage: @escaping @Sendable () -> String
        ) {
            self.code = code
            self.key = key
            self.tail = path
            self.prefix = nil
            self.site = site
            self.writtenMessage = ""
            self.deferredMessage = DeferredMessage(deferredMessage)
            self.underlyingError = nil
        }

        /// The path as it is printed, with arrows.
        public var pathDescription: String { path.joined(separator: " → ") }

        public var description: String {
            var text = message
            if !path.isEmpty && code != .cycle { text += " (path: \(pathDescription))" }
            if let site { text += " [provided at \(site)]" }
            return text
        }
    }
}

extension ServiceGraphError.Problem: CustomReflectable {
    /// The public properties, with ``path`` as an array: `dump`, debuggers and test libraries show the
    /// path as it reads, without walking the list it is kept in.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "code": code, "key": key, "path": path, "site": site as Any, "message": message,
                "underlyingError": underlyingError as Any,
            ],
            displayStyle: .struct
        )
    }
}
