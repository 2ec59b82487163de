/// Something that happened in a graph, with how long it took: for an application's own logger or
/// metrics, without the library depending on any logging package.
///
/// Set ``ServiceGraph/Builder/eventHandler`` to receive them. The handler is called synchronously,
/// from whatever task did the work, so keep it short and thread-safe:
///
/// ```swift
/// builder.eventHandler = { event in
///     logger.debug("\(event)")
/// }
/// ```
///
/// ``ServiceGraph/Builder/eventKinds`` picks the kinds it receives; the graph makes no event of a kind
/// left out.
public struct ServiceGraphEvent: Sendable, CustomStringConvertible {
    /// What happened. New kinds may be added without breaking existing code.
    public struct Kind: Hashable, Sendable, CaseIterable, CustomStringConvertible {
        private enum Base: UInt8, Hashable, Sendable, CaseIterable {
            case buildStarted, buildFinished, buildFailed, serviceCreated, didAdd, willRemove, resolved
            case scopeOpened, scopeClosed, shutdownFinished, scopeDropped, droppedWithoutShutdown
            case updateCommitted, updateFailed, generationRetired

            var name: String {
                switch self {
                case .buildStarted: "build started"
                case .buildFinished: "build finished"
                case .buildFailed: "build failed"
                case .serviceCreated: "service created"
                case .didAdd: "didAdd"
                case .willRemove: "willRemove"
                case .resolved: "resolved"
                case .scopeOpened: "scope opened"
                case .scopeClosed: "scope closed"
                case .shutdownFinished: "shutdown finished"
                case .scopeDropped: "scope dropped"
                case .droppedWithoutShutdown: "graph dropped without shutdown"
                case .updateCommitted: "update committed"
                case .updateFailed: "update failed"
                case .generationRetired: "generation retired"
                }
            }
        }

        private let base: Base

        private init(_ base: Base) {
            self.base = base
        }

        public var description: String { base.name }

        /// Every kind of event, in the order of a graph's life.
        public static var allCases: [Kind] { Base.allCases.map(Kind.init) }

        /// The kind's bit in an ``EventSink``'s mask of wanted kinds.
        var bit: UInt32 { 1 << UInt32(base.rawValue) }

        /// A build began (after validation).
        public static let buildStarted = Kind(.buildStarted)
        /// Every singleton is in place; the duration is the whole build.
        public static let buildFinished = Kind(.buildFinished)
        /// A build failed and released what it had started; the error says why.
        public static let buildFailed = Kind(.buildFailed)
        /// A singleton or scoped instance is in place (made, and its `didAdd` run); the duration is its
        /// factory's.
        public static let serviceCreated = Kind(.serviceCreated)
        /// A service's `didAdd` ran; the error is set when it failed.
        public static let didAdd = Kind(.didAdd)
        /// A service's `willRemove` ran; the error is set when it failed.
        public static let willRemove = Kind(.willRemove)
        /// A service was resolved (only with ``ServiceGraph/Builder/reportsResolveEvents``).
        public static let resolved = Kind(.resolved)
        /// A scope was opened; the event's key lists the seeds it was given, if any
        /// (`"SessionUserKey, RequestKey"`). Sent before `makeScope` returns the scope: a shutdown that
        /// starts meanwhile may close it, and its close is reported after this.
        public static let scopeOpened = Kind(.scopeOpened)
        /// A scope was closed and its instances released.
        public static let scopeClosed = Kind(.scopeClosed)
        /// The graph was shut down; the duration covers every `willRemove`.
        public static let shutdownFinished = Kind(.shutdownFinished)
        /// A scope was released without ``ServiceScope/close()``: its instances are released and the
        /// `willRemove` hooks it owed run in the background (the graph's shutdown waits for them); the
        /// key lists the services whose hooks it owed (nil when it owed none). Each scope opened is
        /// reported once as closed or dropped, after it was reported opened (a scope the event handler
        /// opens while handling an event is not reported opened: see
        /// ``ServiceGraph/Builder/eventHandler``).
        public static let scopeDropped = Kind(.scopeDropped)
        /// A graph was released without ``ServiceGraph/shutdown()`` while services with lifecycle hooks
        /// were still started: their `willRemove` never ran. The key lists them.
        public static let droppedWithoutShutdown = Kind(.droppedWithoutShutdown)
        /// A ``LiveGraph`` committed an update: the key is the new generation ("generation 2"), the
        /// duration the update's (validation, the next generation's build, the commit), and ``update``
        /// what it changed, made again, shared, added and removed.
        public static let updateCommitted = Kind(.updateCommitted)
        /// A ``LiveGraph`` update failed: validation refused it, or a factory or `didAdd` failed and what
        /// it made was released; the current generation is unchanged. ``update`` is what it would have
        /// done, when it got past validation.
        public static let updateFailed = Kind(.updateFailed)
        /// A generation a ``LiveGraph`` replaced has retired: its scopes and readers were done, and its
        /// instances that the next generation did not share got `willRemove`. The key names the
        /// generation; the duration runs from the commit; the error holds any `willRemove` failure.
        public static let generationRetired = Kind(.generationRetired)
    }

    /// What happened.
    public let kind: Kind
    /// The service it happened to, when it is about one.
    public let key: String?
    /// How long it took, when it took time.
    public let duration: Duration?
    /// The error, when it failed. A ``ServiceGraphError`` here carries no dump of the graph
    /// (``ServiceGraphError/dump(_:)`` returns nil; the error thrown to the caller has it, and an
    /// ``update`` has its own): the dump of a failed validation holds the graph's registrations, so a
    /// handler that kept its events would keep every factory, and what it captures, alive.
    public let error: (any Error)?
    /// For ``Kind/updateCommitted`` and ``Kind/updateFailed``: what the update changed, or would have.
    public let update: GraphUpdatePlan?

    init(
        _ kind: Kind,
        key: String? = nil,
        duration: Duration? = nil,
        error: (any Error)? = nil,
        update: GraphUpdatePlan? = nil
    ) {
        self.kind = kind
        self.key = key
        self.duration = duration
        if let graphError = error as? ServiceGraphError, graphError.snapshot != nil {
            self.error = ServiceGraphError(graphError.problems)
        } else {
            self.error = error
        }
        self.update = update
    }

    public var description: String {
        var text = kind.description
        if let key { text += " \(key)" }
        if let duration { text += " in \(duration.milliseconds)" }
        if let update {
            text +=
                " (rebuilt \(update.rebuilt.count), shared \(update.shared.count), added \(update.added.count), "
                + "removed \(update.removed.count))"
        }
        if let error { text += ": \(error)" }
        return text
    }
}
