/// Remembers the plan of the builder's last successful validation, so that the usual
/// `try builder.validate()` followed by `try await builder.build()` validates once.
///
/// Copies of a builder share the cache, so an entry is keyed by the identity of the registrations it
/// was made from: the address of their array's buffer and their count. The cached plan keeps that
/// buffer alive (a valid plan's providers are the registrations themselves), so no other array can
/// take its address while the entry exists; and appending changes the count or the buffer.
final class ValidatedPlanCache: Sendable {
    private struct Entry: @unchecked Sendable {
        let address: UnsafeRawPointer?
        let count: Int
        let plan: GraphPlan
    }

    private let entry = Locked<Entry?>(nil)

    init() {}

    func plan(for registrations: [Registration]) -> GraphPlan? {
        let address = Self.address(of: registrations)
        return entry.withLock { entry in
            guard let entry, entry.address == address, entry.count == registrations.count else { return nil }
            return entry.plan
        }
    }

    func store(_ plan: GraphPlan, for registrations: [Registration]) {
        let address = Self.address(of: registrations)
        entry.withLock { $0 = Entry(address: address, count: registrations.count, plan: plan) }
    }

    private static func address(of registrations: [Registration]) -> UnsafeRawPointer? {
        registrations.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress) }
    }
}
