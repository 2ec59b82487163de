extension Lifecycle {
    /// A graph's started singletons in an order to start them in, so that releasing them in reverse
    /// removes each before what it uses: the build's (`built`, in the order they started), those
    /// created on first use (`created`, in creation order), and the singletons that hand out an
    /// instance another one runs the hooks of (`aliases`).
    ///
    /// Each service comes after everything it depends on through any edge, lazy ones included. An
    /// instance under several keys is one node: it comes after everything any of its keys depends on,
    /// and before everything that depends on any of them, so that it is removed after every service
    /// that uses it through any key. Where that cannot be (a key that hands it out depends, directly
    /// or not, on a service that uses it through another key), the key whose service runs its hooks
    /// (its holder, the first to make it) decides: the other key's dependencies that would close the
    /// cycle are not waited for.
    ///
    /// With neither created nor aliases (most graphs), `built` is that order already and is returned
    /// as it is; otherwise the built keep their relative order where their dependencies allow it.
    ///
    /// - Complexity: O(services + edges) of the graph, once per holder of an alias.
    static func startOrder(
        of built: [StartedService],
        and created: [StartedService],
        aliases: [HookAlias],
        in core: _GraphCore
    ) -> [StartedService] {
        guard !created.isEmpty || !aliases.isEmpty else { return built }
        let started = built + created
        var hooks: [Int: StartedService] = [:]
        for service in started { hooks[service.slot] = service }
        let added = aliases.isEmpty ? [:] : edges(joining: aliases, in: core)
        func dependencies(of slot: Int) -> IndexingIterator<[Int]> {
            (Array(core.dependencies(of: slot)) + (added[slot] ?? [])).makeIterator()
        }
        var visited = [Bool](repeating: false, count: core.count)
        var order: [StartedService] = []
        // Depth first from each started service, in the order given, emitting a service once all its
        // dependencies are emitted (post-order), from an explicit stack. A dependency already on the
        // stack (a cycle through lazy edges) is passed over.
        for root in started where !visited[root.slot] {
            visited[root.slot] = true
            var stack: [(slot: Int, dependencies: IndexingIterator<[Int]>)] = [(root.slot, dependencies(of: root.slot))]
            while !stack.isEmpty {
                if let dependency = stack[stack.count - 1].dependencies.next() {
                    guard dependency >= 0, !visited[dependency] else { continue }
                    visited[dependency] = true
                    stack.append((dependency, dependencies(of: dependency)))
                } else {
                    let slot = stack.removeLast().slot
                    if let service = hooks[slot] { order.append(service) }
                }
            }
        }
        return order
    }

    /// The edges, beyond the declared ones, that make an instance under several keys one node: each
    /// alias depends on its holder (what depends on the alias comes after the instance), and the
    /// holder on what each of its aliases depends on, unless that dependency depends, directly or not,
    /// on the holder (the cycle is broken in favour of the holder's own edges). Holders are taken in
    /// slot order, so the outcome does not depend on the order the aliases were found in.
    ///
    /// - Complexity: O(services + edges) of the graph per holder.
    private static func edges(joining aliases: [HookAlias], in core: _GraphCore) -> [Int: [Int]] {
        var added: [Int: [Int]] = [:]
        var dependents = [[Int]](repeating: [], count: core.count)
        for slot in 0..<core.count {
            for dependency in core.dependencies(of: slot) where dependency >= 0 {
                dependents[dependency].append(slot)
            }
        }
        for alias in aliases where alias.slot != alias.holder {
            added[alias.slot, default: []].append(alias.holder)
            dependents[alias.holder].append(alias.slot)
        }
        let byHolder = Dictionary(grouping: aliases, by: \.holder).sorted { $0.key < $1.key }
        for (holder, group) in byHolder {
            // Everything that depends on the holder, directly or not, by the edges so far.
            var reachesHolder = [Bool](repeating: false, count: core.count)
            reachesHolder[holder] = true
            var stack = [holder]
            while let node = stack.popLast() {
                for dependent in dependents[node] where !reachesHolder[dependent] {
                    reachesHolder[dependent] = true
                    stack.append(dependent)
                }
            }
            // An edge from the holder leaves what reaches it unchanged: a new path back to it would
            // have to reach it first.
            for alias in group.sorted(by: { $0.slot < $1.slot }) {
                for dependency in core.dependencies(of: alias.slot)
                where dependency >= 0 && !reachesHolder[dependency] && added[holder]?.contains(dependency) != true {
                    added[holder, default: []].append(dependency)
                    dependents[dependency].append(holder)
                }
            }
        }
        return added
    }
}
