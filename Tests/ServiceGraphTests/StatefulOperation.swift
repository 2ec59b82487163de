import ServiceGraph

/// How long a task of an operation waits before it acts.
enum ModelDelay: Sendable, CustomStringConvertible {
    case none
    case yield
    case milliseconds(Int)

    func wait() async {
        switch self {
        case .none: break
        case .yield: await Task.yield()
        case .milliseconds(let milliseconds): try? await Task.sleep(for: .milliseconds(milliseconds))
        }
    }

    var description: String {
        switch self {
        case .none: "at once"
        case .yield: "after a yield"
        case .milliseconds(let milliseconds): "after \(milliseconds)ms"
        }
    }
}

/// A `provide` call of a new builder or a child builder.
enum AdditionPlan: CustomStringConvertible {
    case make(ProviderSpec)
    /// `provide(key, lifetime:, dependsOn: target) { $0 }`.
    case alias(ModelKey, lifetime: Lifetime, target: ModelKey)

    var key: ModelKey {
        switch self {
        case .make(let spec): spec.key
        case .alias(let key, _, _): key
        }
    }

    var description: String {
        switch self {
        case .make(let spec): spec.description
        case .alias(let key, let lifetime, let target): "\(key)=alias of \(target) \(lifetime.shortName)"
        }
    }
}

/// An override applied to a copy of a builder.
enum OverridePlan: CustomStringConvertible {
    /// `override(_:dependsOn:factory:)`, keeping the replaced provider's lifetime.
    case factory(ProviderSpec)
    /// `override` of a key nobody provides.
    case unknown(ProviderSpec)
    /// `override(_:with:)` with an instance made now.
    case value(key: Int, label: String)
    /// `override(_:withDouble:as:)`, with a double with or without hooks.
    case double(key: Int, hooked: Bool, label: String)

    var description: String {
        switch self {
        case .factory(let spec): "override \(spec)"
        case .unknown(let spec): "override \(spec) (nobody provides it)"
        case .value(let key, let label): "override k\(key) with value \(label)"
        case .double(let key, let hooked, let label): "override k\(key) withDouble \(hooked ? "H" : "P") \(label)"
        }
    }
}

/// What a copy of a builder is used for right away.
enum BuilderUse: CustomStringConvertible {
    case none
    case validate
    case build(graph: Int)
    case validateAndBuild(graph: Int)

    var description: String {
        switch self {
        case .none: "unused"
        case .validate: "validate"
        case .build(let graph): "build G\(graph)"
        case .validateAndBuild(let graph): "validate, build G\(graph)"
        }
    }
}

/// One step of a random sequence.
enum StatefulOperation: CustomStringConvertible {
    case newBuilder(id: Int, providers: [AdditionPlan], generousTimeouts: Bool)
    case copyBuilder(id: Int, from: Int, overrides: [OverridePlan], use: BuilderUse, keep: Bool)
    case build(graph: Int, builder: Int, validateFirst: Bool)
    /// `makeChildBuilder()`, additions, build; optionally shutting the parent down in between.
    case buildChild(graph: Int, parent: Int, additions: [AdditionPlan], shutDownParentFirst: Bool)
    case makeScope(scope: Int, graph: Int)
    case resolveInScope(scope: Int, key: ModelKey)
    case resolveInGraph(graph: Int, key: ModelKey, synchronously: Bool)
    case close(scope: Int)
    case dropScope(scope: Int, waitForRelease: Bool)
    case shutdown(graph: Int)
    case dropGraph(graph: Int)
    case cancelBuild(graph: Int, builder: Int, after: ModelDelay)
    case cancelShutdown(graph: Int, after: ModelDelay)
    case cancelClose(scope: Int, after: ModelDelay)
    /// Tasks at once on one scope: resolves, maybe a close (maybe cancelled), maybe the shutdown of
    /// the scope's graph or of one of its ancestors.
    case concurrently(
        scope: Int,
        resolves: [(ModelKey, ModelDelay)],
        close: ConcurrentClose?,
        shutdown: ConcurrentShutdown?
    )

    struct ConcurrentClose {
        let delay: ModelDelay
        /// Cancel the closing task after this delay; nil leaves it alone.
        let cancelAfter: ModelDelay?
    }

    struct ConcurrentShutdown {
        let graph: Int
        let delay: ModelDelay
    }

    /// Every ``kind``: a default run must reach them all.
    static let kinds: Set<String> = [
        "newBuilder", "copyBuilder", "build", "buildChild", "makeScope", "resolveInScope", "resolveInGraph", "close",
        "dropScope", "shutdown", "dropGraph", "cancelBuild", "cancelShutdown", "cancelClose", "concurrently",
    ]

    var kind: String {
        switch self {
        case .newBuilder: "newBuilder"
        case .copyBuilder: "copyBuilder"
        case .build: "build"
        case .buildChild: "buildChild"
        case .makeScope: "makeScope"
        case .resolveInScope: "resolveInScope"
        case .resolveInGraph: "resolveInGraph"
        case .close: "close"
        case .dropScope: "dropScope"
        case .shutdown: "shutdown"
        case .dropGraph: "dropGraph"
        case .cancelBuild: "cancelBuild"
        case .cancelShutdown: "cancelShutdown"
        case .cancelClose: "cancelClose"
        case .concurrently: "concurrently"
        }
    }

    var description: String {
        switch self {
        case .newBuilder(let id, let providers, let generous):
            let timeouts = generous ? " (2s timeouts)" : ""
            return "B\(id) = builder [\(providers.map(\.description).joined(separator: "; "))]\(timeouts)"
        case .copyBuilder(let id, let from, let overrides, let use, let keep):
            let list = overrides.map(\.description).joined(separator: "; ")
            return "B\(id) = copy of B\(from) + [\(list)]; \(use)\(keep ? "" : "; copy dropped")"
        case .build(let graph, let builder, let validateFirst):
            return "G\(graph) = build B\(builder)\(validateFirst ? " (validate first)" : "")"
        case .buildChild(let graph, let parent, let additions, let shutDownParentFirst):
            let list = additions.map(\.description).joined(separator: "; ")
            let between = shutDownParentFirst ? "; shut G\(parent) down before building" : ""
            return "G\(graph) = child of G\(parent) + [\(list)]\(between)"
        case .makeScope(let scope, let graph): return "S\(scope) = G\(graph).makeScope()"
        case .resolveInScope(let scope, let key): return "S\(scope).resolve(\(key))"
        case .resolveInGraph(let graph, let key, let synchronously):
            return "G\(graph).\(synchronously ? "resolveSynchronously" : "resolve")(\(key))"
        case .close(let scope): return "S\(scope).close()"
        case .dropScope(let scope, let wait): return "drop S\(scope)\(wait ? " and wait for its release" : "")"
        case .shutdown(let graph): return "G\(graph).shutdown()"
        case .dropGraph(let graph): return "drop G\(graph)"
        case .cancelBuild(let graph, let builder, let delay): return "G\(graph) = build B\(builder), cancelled \(delay)"
        case .cancelShutdown(let graph, let delay): return "G\(graph).shutdown() cancelled \(delay)"
        case .cancelClose(let scope, let delay): return "S\(scope).close() cancelled \(delay)"
        case .concurrently(let scope, let resolves, let close, let shutdown):
            var tasks = resolves.map { "resolve(\($0.0)) \($0.1)" }
            if let close {
                let cancel = close.cancelAfter.map { ", cancelled \($0) later" } ?? ""
                tasks.append("close() \(close.delay)\(cancel)")
            }
            if let shutdown { tasks.append("G\(shutdown.graph).shutdown() \(shutdown.delay)") }
            return "at once on S\(scope): " + tasks.joined(separator: " | ")
        }
    }
}
