import Synchronization

/// Remembers the plan of the builder's last successful validation, so that the usual
/// `try builder.validate()` followed by `try await builder.build()` validates once.
///
/// Copies of a builder share the cache, so an entry is keyed by the ``RegistrationsRevision`` of the
/// registrations it was made from: every change to a builder's registrations gives them a revision
/// never used before, so two builders with the same revision have the same registrations, and a
/// cache hit can never change an answer.
final class ValidatedPlanCache: Sendable {
    private struct Entry: Sendable {
        let revision: RegistrationsRevision
        let plan: GraphPlan
    }

    private let entry = Locked<Entry?>(nil)

    init() {}

    func plan(for revision: RegistrationsRevision) -> GraphPlan? {
        entry.withLock { entry in
            guard let entry, entry.revision == revision else { return nil }
            return entry.plan
        }
    }

    func store(_ plan: GraphPlan, for revision: RegistrationsRevision) {
        entry.withLock { $0 = Entry(revision: revision, plan: plan) }
    }
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
