/// What a built graph remembers about one service for errors and dumps, kept to 16 bytes: a graph of
/// 1,000,000 services holds 1,000,000 of these. The lifetime is the core's (``_GraphCore/lifetime(of:)``).
struct ServiceRecord: Sendable {
    /// The key, as its bare metatype (one word; ``key`` casts it back, for diagnostics only).
    private let keyType: Any.Type
    let line: UInt32
    /// The index into the graph's table of distinct file names, and in the top bit whether an
    /// override replaced the original provider.
    private let fileBits: UInt32

    private static let overrideBit: UInt32 = 1 << 31

    init(key: any ServiceKey.Type, line: UInt32, fileIndex: UInt32, isOverride: Bool) {
        precondition(fileIndex < Self.overrideBit, "too many registration files")
        keyType = key
        self.line = line
        fileBits = fileIndex | (isOverride ? Self.overrideBit : 0)
    }

    /// The key. Every record is made from a `ServiceKey` type, so the cast cannot fail.
    var key: any ServiceKey.Type { keyType as! any ServiceKey.Type }

    var fileIndex: UInt32 { fileBits & ~Self.overrideBit }

    var isOverride: Bool { fileBits & Self.overrideBit != 0 }

    var name: String { key.serviceName }
}
