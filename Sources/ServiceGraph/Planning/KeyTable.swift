/// An open-addressing map from a key type's identity to its slot in the graph.
///
/// Key lookups are on the resolve path, so this avoids `Dictionary`'s seeded hashing: a key's
/// identity is a metadata pointer, and a multiplicative hash of it spreads well enough. The table is
/// at most half full, so probes are short. A built graph copies the two arrays into raw buffers and
/// probes them inline (``_GraphCore/slot(of:)``) with the same ``_KeyProbe``.
struct KeyTable: Sendable {
    /// Per bucket: an identity as raw bits; 0 marks an empty bucket (no metadata lives at address 0).
    private(set) var identities: [UInt]
    /// Per bucket: the slot of its identity; -1 for an empty bucket.
    private(set) var slots: [Int]
    let shift: UInt

    /// Creates a table with room for `count` keys.
    init(capacity count: Int) {
        var buckets = 8
        while buckets < count * 2 { buckets <<= 1 }
        identities = Array(repeating: 0, count: buckets)
        slots = Array(repeating: -1, count: buckets)
        shift = UInt(UInt.bitWidth - buckets.trailingZeroBitCount)
    }

    /// The slot of `identity`, or nil when the key is not in the table.
    ///
    /// - Complexity: O(1) on average.
    func slot(for identity: ObjectIdentifier) -> Int? {
        let bucket = _KeyProbe.bucket(for: UInt(bitPattern: identity), in: identities, shift: shift)
        return identities[bucket] == 0 ? nil : slots[bucket]
    }

    /// Inserts `identity` at `slot` unless it is present; returns the slot already stored, if any.
    @discardableResult
    mutating func insert(_ identity: ObjectIdentifier, slot: Int) -> Int? {
        let bits = UInt(bitPattern: identity)
        let bucket = _KeyProbe.bucket(for: bits, in: identities, shift: shift)
        guard identities[bucket] == 0 else { return slots[bucket] }
        identities[bucket] = bits
        slots[bucket] = slot
        return nil
    }
}

/// The one probe loop of the key tables: ``KeyTable`` while planning, ``_GraphCore/slot(of:)`` (inlined
/// into every resolve) once built.
@usableFromInline
enum _KeyProbe {
    /// The bucket of `bits` in `identities`, a table of 2^(64 - shift) buckets at most half full: the
    /// bucket holding `bits`, or the empty bucket (0) where it belongs.
    ///
    /// - Complexity: O(1) on average.
    @inlinable
    @inline(__always)
    static func bucket<Identities: RandomAccessCollection<UInt>>(
        for bits: UInt,
        in identities: Identities,
        shift: UInt
    ) -> Int where Identities.Index == Int {
        let mask = identities.count &- 1
        var index = Int(truncatingIfNeeded: (bits &* 0x9E37_79B9_7F4A_7C15) >> shift)
        while true {
            let identity = identities[index]
            if identity == bits || identity == 0 { return index }
            index = (index &+ 1) & mask
        }
    }
}
