import Synchronization

/// Reading ahead in a large graph: validation and the build read the memory the next batch of services
/// will need (key table buckets, instances) in passes of independent loads, so that a million-service
/// graph waits for memory once per batch rather than once per lookup. What the passes read goes to
/// ``keep(_:)``.
enum ReadAhead {
    /// How many services a read ahead covers, at a time.
    static var batch: Int { 16 }

    /// From how many services on reading ahead pays: below it the tables stay in the caches, and the
    /// extra reads cost a 1,000-service validation 7%.
    static var threshold: Int { 1 << 14 }

    /// Whether the service at `position` of a pass over `count` starts a batch to read ahead for.
    static func startsBatch(_ position: Int, of count: Int) -> Bool {
        position & (batch - 1) == 0 && count >= threshold
    }

    /// Keeps what a read ahead read: an atomic store, which the optimizer does not remove, so that it
    /// keeps the reads (a plain value never used would let it drop them).
    static func keep(_ value: UInt) {
        sink.store(value, ordering: .relaxed)
    }

    private static let sink = Atomic<UInt>(0)
}
