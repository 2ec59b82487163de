/// An open-addressing map from a key type's identity to its slot in the graph.
///
/// Key lookups are on the resolve path, so this avoids `Dictionary`'s seeded hashing: a key's
/// identity is a metadata pointer, and a multiplicative hash of it spreads well enough. The table is
/// at most half full, so probes are short. A built graph copies the entries into a raw buffer and
/// probes it inline (``GraphCore/slot(of:)``).
@usableFromInline
struct KeyTable: Sendable {
    /// One bucket: an identity as raw bits (0 marks an empty bucket; no metadata lives at address 0)
    /// and its slot.
    @usableFromInline
    struct Entry: Sendable {
        @usableFromInline
        var identity: UInt
        @usableFromInline
        var slot: Int
    }

    private(set) var entries: [Entry]
    let shift: UInt

    /// Creates a table with room for `count` keys.
    init(capacity count: Int) {
        var buckets = 8
        while buckets < count * 2 { buckets <<= 1 }
        entries = Array(repeating: Entry(identity: 0, slot: -1), count: buckets)
        shift = UInt(UInt.bitWidth - buckets.trailingZeroBitCount)
    }

    /// The first bucket to probe for `bits` in a table of 2^(64 - shift) buckets.
    @inlinable
    @inline(__always)
    static func bucket(for bits: UInt, shift: UInt) -> Int {
        Int(truncatingIfNeeded: (bits &* 0x9E37_79B9_7F4A_7C15) >> shift)
    }

    /// The slot of `identity`, or nil when the key is not in the table.
    ///
    /// - Complexity: O(1) on average.
    func slot(for identity: ObjectIdentifier) -> Int? {
        let bits = UInt(bitPattern: identity)
        let mask = entries.count - 1
        var index = Self.bucket(for: bits, shift: shift)
        while true {
            let entry = entries[index]
            if entry.identity == bits { return entry.slot }
            if entry.identity == 0 { return nil }
            index = (index + 1) & mask
        }
    }

    /// Inserts `identity` at `slot` unless it is present; returns the slot already stored, if any.
    @discardableResult
    mutating func insert(_ identity: ObjectIdentifier, slot: Int) -> Int? {
        let bits = UInt(bitPattern: identity)
        let mask = entries.count - 1
        var index = Self.bucket(for: bits, shift: shift)
        while true {
            let entry = entries[index]
            if entry.identity == bits { return entry.slot }
            if entry.identity == 0 {
                entries[index] = Entry(identity: bits, slot: slot)
                return nil
            }
            index = (index + 1) & mask
        }
    }
}
