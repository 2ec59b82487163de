// The service shapes every contender wires: three singletons, a transient handler that needs all
// three, a chain of ten transients on top of a singleton, and a per-request session.

protocol Logging: AnyObject, Sendable {
    func log(_ message: String)
}

final class Logger: Logging {
    func log(_ message: String) {}
}

final class Clock: Sendable {
    let epoch = 1_700_000_000
}

final class Store: Sendable {
    let name = "store"
}

/// A transient with three singleton dependencies.
final class Handler: Sendable {
    let logger: any Logging
    let clock: Clock
    let store: Store

    init(logger: any Logging, clock: Clock, store: Store) {
        self.logger = logger
        self.clock = clock
        self.store = store
    }
}

/// One link of a chain of transients; link 0 depends on the `Store` singleton.
final class Link: Sendable {
    let previous: Link?
    let store: Store?

    init(previous: Link) {
        self.previous = previous
        self.store = nil
    }

    init(store: Store) {
        self.previous = nil
        self.store = store
    }
}

/// A per-request (scoped) service.
final class Session: Sendable {
    let logger: any Logging

    init(logger: any Logging) {
        self.logger = logger
    }
}

/// A node of a generated graph: depends on up to three earlier nodes.
final class GraphNode: Sendable {
    let dependencies: [GraphNode]

    init(_ dependencies: [GraphNode]) {
        self.dependencies = dependencies
    }
}

/// The dependencies of generated node `index`: up to three earlier nodes, deterministic.
func generatedDependencies(of index: Int) -> [Int] {
    guard index > 0 else { return [] }
    var result: [Int] = [index - 1]
    if index > 2 { result.append((index * 7 + 3) % (index - 1)) }
    if index > 5 { result.append((index * 13 + 5) % (index / 2)) }
    var unique: [Int] = []
    for dependency in result where !unique.contains(dependency) { unique.append(dependency) }
    return unique
}
