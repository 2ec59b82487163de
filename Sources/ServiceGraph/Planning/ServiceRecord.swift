/// What a built graph remembers about one service for errors and dumps, kept to 8 bytes: a graph of
/// 1,000,000 services holds 1,000,000 of these. The key is the core's (``_GraphCore/key(at:)``, from
/// the key table's identities), and so is the lifetime (``_GraphCore/lifetime(of:)``).
struct ServiceRecord: Sendable {
    let line: UInt32
    /// The index into the graph's table of distinct file names; in the top bit whether an override
    /// replaced the original provider, in the next one whether the service is a scope's seed, in the
    /// next whether it is one of the two forms a synchronous closure registered
    /// (``Registration/isPairedForm``), in the next whether it is a singleton whose instance is the parent
    /// graph's (``Registration/borrowsParentInstance``).
    private let fileBits: UInt32

    private static let overrideBit: UInt32 = 1 << 31
    private static let seedBit: UInt32 = 1 << 30
    private static let pairedFormBit: UInt32 = 1 << 29
    private static let borrowedBit: UInt32 = 1 << 28
    private static let flagBits = overrideBit | seedBit | pairedFormBit | borrowedBit

    init(
        line: UInt32,
        fileIndex: UInt32,
        isOverride: Bool,
        isSeed: Bool,
        isPairedForm: Bool = false,
        borrowsParentInstance: Bool = false
    ) {
        precondition(fileIndex < Self.borrowedBit, "too many registration files")
        self.line = line
        fileBits =
            fileIndex | (isOverride ? Self.overrideBit : 0) | (isSeed ? Self.seedBit : 0)
            | (isPairedForm ? Self.pairedFormBit : 0) | (borrowsParentInstance ? Self.borrowedBit : 0)
    }

    var fileIndex: UInt32 { fileBits & ~Self.flagBits }

    var isOverride: Bool { fileBits & Self.overrideBit != 0 }

    /// Whether the service is a seed (``ServiceGraph/Builder/seed(_:fileID:line:)``).
    var isSeed: Bool { fileBits & Self.seedBit != 0 }

    /// Whether the service is one of the two forms of a factory with arguments a synchronous closure
    /// registered.
    var isPairedForm: Bool { fileBits & Self.pairedFormBit != 0 }

    /// Whether the service is a singleton whose instance is the parent graph's, which the parent starts
    /// and stops.
    var borrowsParentInstance: Bool { fileBits & Self.borrowedBit != 0 }
}
