/// An open-addressing map from a key type's identity to its slot in the graph.
///
/// Key lookups are on the resolve path, so this avoids `Dictionary`'s seeded hashing: a key's
/// identity is a metadata pointer, and a multiplicative hash of it spreads well enough. The buckets
/// hold only slots (4 bytes each, -1 when empty), and the identities are kept once per slot, in slot
/// order: a million services take 8 MB of buckets and 8 MB of identities, where buckets holding both
/// took 25 MB. The table is at most half full, so probes are short. A built graph copies the two
/// arrays into raw buffers and probes them inline (``_GraphCore/slot(of:)``) with the same
/// ``_KeyProbe``.
struct KeyTable: Sendable {
    /// Per bucket: the slot whose identity hashed there (or after it); -1 marks an empty bucket.
    private(set) var buckets: [Int32]
    /// Per slot: its key's identity, as raw bits.
    private(set) var identities: [UInt]
    let shift: UInt

    /// Creates a table with room for `count` keys.
    init(capacity count: Int) {
        var bucketCount = 8
        while bucketCount < count * 2 { bucketCount <<= 1 }
        buckets = Array(repeating: -1, count: bucketCount)
        identities = []
        identities.reserveCapacity(count)
        shift = UInt(UInt.bitWidth - bucketCount.trailingZeroBitCount)
    }

    /// The slot of `identity`, or nil when the key is not in the table.
    ///
    /// - Complexity: O(1) on average.
    func slot(for identity: ObjectIdentifier) -> Int? {
        let bits = UInt(bitPattern: identity)
        let bucket = _KeyProbe.bucket(for: bits, in: buckets, identities: identities, shift: shift)
        return buckets[bucket] < 0 ? nil : Int(buckets[bucket])
    }

    /// Inserts `identity` as the next slot (``count``) unless it is present; returns the slot
    /// already holding it, if any.
    @discardableResult
    mutating func insert(_ identity: ObjectIdentifier) -> Int? {
        let bits = UInt(bitPattern: identity)
        let bucket = _KeyProbe.bucket(for: bits, in: buckets, identities: identities, shift: shift)
        guard buckets[bucket] < 0 else { return Int(buckets[bucket]) }
        buckets[bucket] = Int32(truncatingIfNeeded: identities.count)
        identities.append(bits)
        return nil
    }

    /// How many keys the table holds: the next slot.
    var count: Int { identities.count }

    /// How many keys a batch read ahead of lookups (``touch(_:holders:)``) has room for.
    static let touchCapacity = 128

    /// Reads the bucket of each identity in `batch` and, if `holders`, the identity its slot holds,
    /// and returns what it read (for the caller to keep, so that the reads are not optimized away). In a
    /// large table each lookup waits for memory, twice; reads made together, ahead of a batch of lookups,
    /// wait together.
    func touch(_ batch: UnsafeMutableBufferPointer<UInt>, holders: Bool) -> UInt {
        var sum: UInt = 0
        buckets.withUnsafeBufferPointer { buckets in
            let shift = self.shift
            // First the buckets, then the identities their slots hold: each pass's reads are independent.
            for index in batch.indices {
                batch[index] = UInt(bitPattern: Int(buckets[_KeyProbe.home(of: batch[index], shift: shift)]))
            }
            guard holders else {
                for slot in batch { sum &+= slot }
                return
            }
            identities.withUnsafeBufferPointer { identities in
                for slot in batch where Int(bitPattern: slot) >= 0 { sum &+= identities[Int(bitPattern: slot)] }
            }
        }
        return sum
    }
}

/// The one hash and probe loop of the key tables: ``KeyTable`` while planning, ``_GraphCore/slot(of:)`` (inlined
/// into every resolve) once built.
@usableFromInline
enum _KeyProbe {
    /// The bucket of `bits` in `buckets`, a table of 2^(64 - shift) buckets at most half full, each
    /// holding a slot whose identity is in `identities` (or -1): the bucket holding the slot of
    /// `bits`, or the empty bucket where it belongs.
    ///
    /// - Complexity: O(1) on average.
    /// The bucket where the probe for `bits` starts, in a table of 2^(64 - shift) buckets.
    @inlinable
    @inline(__always)
    static func home(of bits: UInt, shift: UInt) -> Int {
        Int(truncatingIfNeeded: (bits &* 0x9E37_79B9_7F4A_7C15) &>> shift)
    }

    @inlinable
    @inline(__always)
    static func bucket<Buckets: RandomAccessCollection<Int32>, Identities: RandomAccessCollection<UInt>>(
        for bits: UInt,
        in buckets: Buckets,
        identities: Identities,
        shift: UInt
    ) -> Int where Buckets.Index == Int, Identities.Index == Int {
        let mask = buckets.count &- 1
        var index = home(of: bits, shift: shift)
        while true {
            let slot = buckets[index]
            if slot < 0 || identities[Int(truncatingIfNeeded: slot)] == bits { return index }
            index = (index &+ 1) & mask
        }
    }
}
