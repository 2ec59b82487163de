import Synchronization

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

    /// The plan of `registrations` and its findings, made and validated only when the cache does not
    /// already hold those of `revision`.
    func checkedPlan(
        for revision: RegistrationsRevision,
        of registrations: [Registration]
    ) -> CheckedPlan {
        if let checked = entry.withLock({ $0?.revision == revision ? $0?.checked : nil }) {
            return checked
        }
        let plan = GraphPlan(registrations)
        let checked = CheckedPlan(plan: plan, findings: GraphValidator(plan).findings())
        entry.withLock { $0 = Entry(revision: revision, checked: checked) }
        return checked
    }
}

/// A plan with everything validation found in it.
struct CheckedPlan: Sendable {
    let plan: GraphPlan
    let findings: GraphValidator.Findings
}

/// Identifies one state of a builder's registrations: a fresh number, process-wide, each time they
/// change. Copies of a builder share a revision only while they share their registrations.
struct RegistrationsRevision: Hashable, Sendable {
    private let value: UInt64

    /// The revision of a builder with no registrations.
    static let empty = RegistrationsRevision(value: 0)

    private static let counter = Atomic<UInt64>(0)

    private init(value: UInt64) {
        self.value = value
    }

    /// A revision no builder has had before.
    static func next() -> RegistrationsRevision {
        RegistrationsRevision(value: counter.add(1, ordering: .relaxed).newValue)
    }
}
