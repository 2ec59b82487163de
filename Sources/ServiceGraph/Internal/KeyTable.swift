/// An open-addressing map from a key type's identity to its slot in the graph.
///
/// Key lookups are on the resolve path, so this avoids `Dictionary`'s seeded hashing: a key's
/// identity is a metadata pointer, and a multiplicative hash of it spreads well enough. The table is
/// at most half full, so probes are short.
@usableFromInline
struct KeyTable: Sendable {
    /// Identities as raw bits; 0 marks an empty bucket (no metadata lives at address 0).
    @usableFromInline
    var identities: [UInt]
    @usableFromInline
    var slots: [Int]
    @usableFromInline
    let shift: UInt

    /// Creates a table with room for `count` keys.
    init(capacity count: Int) {
        var buckets = 8
        while buckets < count * 2 { buckets <<= 1 }
        identities = Array(repeating: 0, count: buckets)
        slots = Array(repeating: -1, count: buckets)
        shift = UInt(UInt.bitWidth - buckets.trailingZeroBitCount)
    }

    @inlinable
    func bucket(for bits: UInt) -> Int {
        Int(truncatingIfNeeded: (bits &* 0x9E37_79B9_7F4A_7C15) >> shift)
    }

    /// The slot of `identity`, or nil when the key is not in the table.
    ///
    /// - Complexity: O(1) on average.
    @inlinable
    func slot(for identity: ObjectIdentifier) -> Int? {
        let bits = UInt(bitPattern: identity)
        let mask = identities.count - 1
        var index = bucket(for: bits)
        while true {
            let stored = identities[index]
            if stored == bits { return slots[index] }
            if stored == 0 { return nil }
            index = (index + 1) & mask
        }
    }

    /// Inserts `identity` at `slot` unless it is present; returns the slot already stored, if any.
    @discardableResult
    mutating func insert(_ identity: ObjectIdentifier, slot: Int) -> Int? {
        let bits = UInt(bitPattern: identity)
        let mask = identities.count - 1
        var index = bucket(for: bits)
        while true {
            let stored = identities[index]
            if stored == bits { return slots[index] }
            if stored == 0 {
                identities[index] = bits
                slots[index] = slot
                return nil
            }
            index = (index + 1) & mask
        }
    }
}
