/// The builder's registrations, in order, kept in chunks of at most ``chunkCapacity``.
///
/// Why not one array: a registration takes 168 bytes, so 1,000 of them are past the size at which
/// allocators map memory of its own (glibc: 128 KB), and an array growing to that size copies every
/// registration on each doubling and frees buffers the allocator then hands back to the system,
/// only to fault them in again on the next build (measured: a third of a 1,000-service round from
/// the main actor). In chunks, a registration past the first chunk never moves, no allocation
/// exceeds a chunk, and a million registrations take their own size at peak instead of up to three
/// times it. (The first chunk grows as an array does, so a small graph takes no more than it needs.)
///
/// A value with copy-on-write chunks: a copy of a builder shares them, and appending to the copy
/// copies the list of chunks (a pointer per 256 registrations) and the chunk it appends to.
struct RegistrationList: RandomAccessCollection, MutableCollection, Sendable {
    /// Registrations per chunk: a chunk is 42 KB.
    static let chunkCapacity = 256
    private static let chunkShift = chunkCapacity.trailingZeroBitCount
    private static let chunkMask = chunkCapacity - 1

    private var chunks: [[Registration]] = []
    private(set) var count = 0
    /// Whether a registration appended (or written) here has a wrapper: an optional or provider
    /// dependency, or a wrapper as its key. Never reset, so a superset: a plan of a list without any
    /// skips the per-edge kinds altogether.
    private(set) var mayHaveWrappers = false
    /// Whether a registration appended (or written) here is created on first use whatever depends on
    /// it (``Registration/isCreatedOnFirstUse``). Never reset, so a superset.
    private(set) var mayHaveFirstUseSingletons = false
    /// Whether a registration appended (or written) here is a factory with arguments, in either form
    /// (``Registration/argumentFactoryForm``). Never reset, so a superset.
    private(set) var mayHaveArgumentFactories = false
    /// Whether a registration appended (or written) here was inherited from a parent graph. Never
    /// reset, so a superset.
    private(set) var mayHaveInherited = false
    /// The kinds of scope the registrations name (``Registration/scopeKind``), the default first.
    var scopeKinds: [ScopeKind] = [.default]
    /// The modules the registrations came from (``Registration/module``), none first.
    var modules: [ModuleInfo] = [.none]

    init() {}

    init(_ registrations: some Sequence<Registration>) {
        for registration in registrations { append(registration) }
    }

    var startIndex: Int { 0 }
    var endIndex: Int { count }

    /// The registration at `position`, read and written in place.
    subscript(position: Int) -> Registration {
        _read {
            precondition(position >= 0 && position < count, "registration index out of range")
            yield chunks[position &>> Self.chunkShift][position & Self.chunkMask]
        }
        _modify {
            precondition(position >= 0 && position < count, "registration index out of range")
            yield &chunks[position &>> Self.chunkShift][position & Self.chunkMask]
            let written = chunks[position &>> Self.chunkShift][position & Self.chunkMask]
            mayHaveWrappers = mayHaveWrappers || written.isWrapperKey || written.dependencies.hasWrappers
            mayHaveFirstUseSingletons = mayHaveFirstUseSingletons || written.isCreatedOnFirstUse
            mayHaveArgumentFactories = mayHaveArgumentFactories || written.argumentFactoryForm != .none
            mayHaveInherited = mayHaveInherited || written.isInherited
        }
    }

    mutating func append(_ registration: consuming Registration) {
        mayHaveWrappers = mayHaveWrappers || registration.isWrapperKey || registration.dependencies.hasWrappers
        mayHaveFirstUseSingletons = mayHaveFirstUseSingletons || registration.isCreatedOnFirstUse
        mayHaveArgumentFactories = mayHaveArgumentFactories || registration.argumentFactoryForm != .none
        mayHaveInherited = mayHaveInherited || registration.isInherited
        if count & Self.chunkMask == 0 {
            // The first chunk grows as an array does (most graphs are small); the next ones are for
            // graphs already past a chunk, and take a whole one at once.
            var chunk: [Registration] = []
            if count > 0 { chunk.reserveCapacity(Self.chunkCapacity) }
            chunks.append(chunk)
        }
        chunks[chunks.count &- 1].append(registration)
        count &+= 1
    }

    /// Gives each registration without a serial the next one from `next` (see
    /// `ServiceGraph.Builder.assignSerials()`).
    mutating func assignSerials(from next: inout Int32) {
        for chunk in chunks.indices {
            for index in chunks[chunk].indices where chunks[chunk][index].serial < 0 {
                chunks[chunk][index].serial = next
                next += 1
            }
        }
    }

    /// Removes the registrations `shouldBeRemoved` picks, keeping the order of the others; a list
    /// with none to remove is left as it is (its chunks still shared with copies).
    mutating func removeAll(where shouldBeRemoved: (Registration) throws -> Bool) rethrows {
        guard try contains(where: shouldBeRemoved) else { return }
        var kept = RegistrationList()
        kept.scopeKinds = scopeKinds
        kept.modules = modules
        for registration in self where try !shouldBeRemoved(registration) { kept.append(registration) }
        self = kept
    }
}
