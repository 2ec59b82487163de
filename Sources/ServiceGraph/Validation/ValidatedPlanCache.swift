/// Remembers the builder's last checked plan and what validation found in it, so that the usual
/// `try builder.validate()` followed by `try await builder.build()` validates once, and `lint()` or a
/// dump after either (even of a broken graph) plans nothing again.
///
/// Copies of a builder share the cache, so an entry is keyed by the ``RegistrationsRevision`` of the
/// registrations it was made from: every change to a builder's registrations gives them a revision
/// never used before, so two builders with the same revision have the same registrations, and a
/// cache hit can never change an answer.
final class ValidatedPlanCache: Sendable {
    private struct Entry: Sendable {
        let revision: RegistrationsRevision
        let checked: CheckedPlan
    }

    private let entry = Locked<Entry?>(nil)

    init() {}

    /// The plan of `registrations`, `contributions` and `decorations`, and its findings, made and
    /// validated only when the cache does not already hold those of `revision`.
    func checkedPlan(
        for revision: RegistrationsRevision,
        of registrations: RegistrationList,
        contributions: [Contribution],
        inheritedContributions: [PlacedContribution],
        decorations: [Decoration]
    ) -> CheckedPlan {
        if let checked = entry.withLock({ $0?.revision == revision ? $0?.checked : nil }) {
            return checked
        }
        var registrations = registrations
        var notes = CompositionNotes()
        var compositionProblems =
            contributions.isEmpty && inheritedContributions.isEmpty
            ? []
            : Contributions.add(
                contributions,
                inherited: inheritedContributions,
                to: &registrations,
                notes: &notes
            )
        if !decorations.isEmpty { compositionProblems += Decorations.apply(decorations, to: &registrations) }
        var plan = GraphPlan(registrations, composition: notes)
        // A list nobody contributes to is empty: planned again with it, only where keys are missing.
        if Contributions.addEmptyLists(missingFrom: plan, to: &registrations) {
            plan = GraphPlan(registrations, composition: notes)
        }
        var findings = GraphValidator(plan).findings()
        if !compositionProblems.isEmpty {
            findings = .init(
                problems: compositionProblems + findings.problems,
                unusedProviders: findings.unusedProviders
            )
        }
        let checked = CheckedPlan(plan: plan, findings: findings)
        entry.withLock { $0 = Entry(revision: revision, checked: checked) }
        return checked
    }
}

/// A plan with everything validation found in it.
struct CheckedPlan: Sendable {
    let plan: GraphPlan
    let findings: GraphValidator.Findings
}

/// Identifies one state of a builder's registrations: a lineage and how many changes into it.
///
/// A builder changes its lineage's count in place only while it holds the lineage alone; a builder
/// whose lineage is shared (with a copy of itself, or with a cached revision) starts a new lineage
/// when it changes. So copies of a builder share a revision only while they share their
/// registrations, and two revisions are equal only for the same registrations. A change costs a
/// uniqueness check and an increment, not an atomic operation per `provide`.
struct RegistrationsRevision: Equatable, Sendable {
    /// Held, so that a cached revision keeps its lineage's identity from being reused.
    private let lineage: RegistrationsLineage
    private let count: UInt64

    init(_ lineage: RegistrationsLineage) {
        self.lineage = lineage
        self.count = lineage.count
    }

    static func == (left: Self, right: Self) -> Bool {
        left.lineage === right.lineage && left.count == right.count
    }
}

/// The history of one builder's registrations, shared by its copies until one of them changes.
///
/// `@unchecked Sendable`: `count` is written only by a builder that holds the only reference (checked
/// with `isKnownUniquelyReferenced` in a mutating method, so no other value can be reading it).
final class RegistrationsLineage: @unchecked Sendable {
    var count: UInt64 = 0

    init() {}
}
