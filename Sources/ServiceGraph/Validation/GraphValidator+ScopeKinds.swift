extension GraphValidator {
    /// Services that need a kind of scope (``ScopeKind``) they cannot have: a scoped service that
    /// depends on one whose kind its scopes are not within (a session's service on a request's: a
    /// captive dependency, or on a kind of another branch), and a transient that needs two kinds of
    /// scope neither of which is inside the other (no scope has both). Every kind of edge counts: a
    /// provider or lazy handle resolves in the scope its holder was made in.
    ///
    /// - Complexity: O(services + edges), in dependency order (services on a cycle are left to the
    ///   cycle's report).
    func scopeKindProblems() -> [ServiceGraphError.Problem] {
        guard let slotKinds = plan.slotScopeKinds else { return [] }
        let kinds = plan.scopeKinds
        let lifetimes = plan.lifetimes
        // Per slot: the innermost kind of scope resolving it needs, and the service that needs it.
        var needed = [(kind: Int, via: Int)?](repeating: nil, count: plan.count)
        var problems: [ServiceGraphError.Problem] = []
        for slot in plan.order where lifetimes[slot] != .singleton {
            var need: (kind: Int, via: Int)? = lifetimes[slot] == .scoped ? (Int(slotKinds[slot]), slot) : nil
            for dependency in plan.edges.dependencies(of: slot) where dependency != GraphPlan.missing {
                guard let dependencyNeed = needed[dependency] else { continue }
                let dependencyKind = kinds[dependencyNeed.kind]
                guard let current = need else {
                    need = (dependencyNeed.kind, dependencyNeed.via)
                    continue
                }
                let currentKind = kinds[current.kind]
                if currentKind.isWithin(dependencyKind) { continue }
                if lifetimes[slot] == .transient && dependencyKind.isWithin(currentKind) {
                    need = (dependencyNeed.kind, dependencyNeed.via)
                    continue
                }
                if !plan.isReportedWithItsPair(slot) {
                    problems.append(problem(slot, dependency, needing: dependencyNeed, against: current))
                }
                if lifetimes[slot] == .transient { break }
            }
            needed[slot] = need
        }
        return problems
    }

    /// The problem of `slot`, whose scopes are of `current`'s kind (or need it), depending on
    /// `dependency`, which needs `dependencyNeed`'s.
    private func problem(
        _ slot: Int,
        _ dependency: Int,
        needing dependencyNeed: (kind: Int, via: Int),
        against current: (kind: Int, via: Int)
    ) -> ServiceGraphError.Problem {
        let kinds = plan.scopeKinds
        let (name, dependencyName) = (plan.name(slot), plan.name(dependency))
        let (own, other) = (kinds[current.kind], kinds[dependencyNeed.kind])
        let through = dependencyNeed.via == dependency ? "" : " (through \(plan.name(dependencyNeed.via)))"
        let isScoped = plan.lifetimes[slot] == .scoped
        let message: String
        if isScoped && other.isWithin(own) {
            message =
                "captive dependency: \(name) (scoped in \(own) scopes) depends on \(dependencyName)\(through), which "
                + "belongs to \(other) scopes: a \(own.name) scope would keep it alive past them"
        } else if isScoped {
            message =
                "\(name) (scoped in \(own) scopes) depends on \(dependencyName)\(through), which belongs to \(other) "
                + "scopes: a \(own.name) scope is not inside one"
        } else {
            let first = current.via == slot ? "" : " for \(plan.name(current.via))"
            message =
                "\(name) needs a \(own) scope\(first) and a \(other) scope for \(plan.name(dependencyNeed.via)), "
                + "and neither kind is inside the other: no scope has both"
        }
        return .init(
            isScoped && other.isWithin(own) ? .captiveDependency : .wrongScopeKind,
            key: name,
            path: plan.pathFromRoot(to: slot) + [dependencyName],
            site: plan.providers[slot].site.site,
            message: message
        )
    }
}
