/// Human-readable type names for errors and dumps.
///
/// Every name is made in one pass over the runtime's spelling of the type (`_typeName(_:qualified:)`,
/// what `String(reflecting:)` prints for a type, without the dynamic casts that make the latter slow
/// the first time it meets a type). The pass drops the `(unknown context at $10f5c3a20).` segments
/// the runtime prints for private types, and the `Swift.` qualification of standard library types
/// wherever it appears (`[Swift.Int]` reads `Array<Int>`, `Box<Swift.Int>` reads `Box<Int>`). Only
/// whole module names that qualify a type are dropped: `SwiftUI.View` and a type nested in a type
/// named `Swift` keep theirs.
enum TypeName {
    /// The type's name without its module prefix (`Outer.Inner`, `any AppLogger`, `Box<Int>`).
    static func display(_ type: Any.Type) -> String {
        rewritten(_typeName(type, qualified: true), droppingLeadingModule: true).name
    }

    /// The type's name with its module (`FeatureModule.ConfigKey`), for telling apart types whose
    /// ``display(_:)`` names are the same; standard library types still read without `Swift.`.
    static func qualified(_ type: Any.Type) -> String {
        rewritten(_typeName(type, qualified: true), droppingLeadingModule: false).name
    }

    /// `type`'s name with the modules of `type` and of `reference` removed, so value types read like
    /// their keys.
    static func display(_ type: Any.Type, moduleOf reference: Any.Type) -> String {
        var referenceName = _typeName(reference, qualified: true)
        let referenceModule = referenceName.withUTF8 { utf8 in
            utf8.baseAddress.map {
                Array(UnsafeBufferPointer(start: $0, count: leadingModuleLength(of: $0, utf8.count)))
            }
        }
        return rewritten(
            _typeName(type, qualified: true),
            droppingLeadingModule: true,
            alsoDropping: referenceModule ?? []
        ).name
    }

    /// Whether a name made by ``display(_:)`` still names a module (`Other.Thing`, `Box<Other.Thing>`).
    static func mentionsModule(_ name: String) -> Bool {
        rewritten(name, droppingLeadingModule: false).mentionsModule
    }

    /// `name` without private-context segments and the standard library's qualification; with
    /// `droppingLeadingModule`, also without the qualification by the module the name starts with,
    /// wherever it appears; and without the qualification by `extra`. Also says whether some other
    /// module's qualification is left.
    ///
    /// - Complexity: O(`name`), one pass over its bytes, written with plain pointers so that it stays
    ///   cheap in debug builds too (where tests name 100,000 keys). Every pointer here is borrowed
    ///   from a `withUTF8` or `withUnsafeBufferPointer` around the loop, indices stay below the
    ///   `count` that came with it, and the output never grows past the input's length.
    private static func rewritten(
        _ name: String,
        droppingLeadingModule: Bool,
        alsoDropping extra: [UInt8] = []
    ) -> (name: String, mentionsModule: Bool) {
        var name = name
        var mentionsModule = false
        let result = name.withUTF8 { utf8 in
            identifierBytes.withUnsafeBufferPointer { isIdentifier in
                extra.withUnsafeBufferPointer { extra in
                    String(unsafeUninitializedCapacity: utf8.count) { output in
                        guard let bytes = utf8.baseAddress, let target = output.baseAddress else { return 0 }
                        let count = utf8.count
                        var written = 0
                        var index = 0
                        // The module the name starts with, when it is dropped: its length.
                        var ownModule = 0
                        // Whether the byte before `index` ends an identifier or a qualification (`.`):
                        // then an identifier at `index` is nested or continues a name, not a module.
                        var afterName = false
                        while index < count {
                            let byte = bytes[index]
                            if byte == openParenthesis && startsWith(unknownContext, bytes + index, count - index) {
                                // `(unknown context at $10f5c3a20).`: dropped, with its dot.
                                index += unknownContext.count
                                while index < count && bytes[index] != closeParenthesis { index += 1 }
                                index += 1
                                if index < count && bytes[index] == dot { index += 1 }
                                afterName = true
                                continue
                            }
                            if !isIdentifier[Int(byte)] {
                                target[written] = byte
                                written += 1
                                afterName = byte == dot
                                index += 1
                                continue
                            }
                            var end = index + 1
                            while end < count && isIdentifier[Int(bytes[end])] { end += 1 }
                            let length = end - index
                            if !afterName && end < count && bytes[end] == dot {
                                // A module: `Swift`, the leading one, `extra`, or another one that stays.
                                let word = bytes + index
                                if index == 0 && droppingLeadingModule { ownModule = length }
                                if isStandardLibrary(word, length)
                                    || (ownModule > 0 && length == ownModule && equal(word, bytes, length))
                                    || (length == extra.count && extra.count > 0
                                        && equal(word, extra.baseAddress!, length))
                                {
                                    index = end + 1
                                    afterName = true  // what follows a module is a type, even one named like one
                                    continue
                                }
                                mentionsModule = true
                            }
                            (target + written).update(from: bytes + index, count: length)
                            written += length
                            index = end
                            afterName = true
                        }
                        return written
                    }
                }
            }
        }
        return (result, mentionsModule)
    }

    /// The length of the module a runtime type name starts with (`Mod` in `Mod.Outer.Inner`), or 0
    /// when it does not start with one (a tuple, a function type).
    private static func leadingModuleLength(of bytes: UnsafePointer<UInt8>, _ count: Int) -> Int {
        identifierBytes.withUnsafeBufferPointer { isIdentifier in
            var end = 0
            while end < count && isIdentifier[Int(bytes[end])] { end += 1 }
            return end > 0 && end < count && bytes[end] == dot ? end : 0
        }
    }

    /// Whether the `count` bytes at `bytes` start with `prefix`.
    private static func startsWith(_ prefix: [UInt8], _ bytes: UnsafePointer<UInt8>, _ count: Int) -> Bool {
        guard count >= prefix.count else { return false }
        return prefix.withUnsafeBufferPointer { prefix in
            guard let start = prefix.baseAddress else { return true }  // an empty prefix
            return equal(start, bytes, prefix.count)
        }
    }

    /// Whether the `count` bytes at `a` and at `b` are the same.
    private static func equal(_ a: UnsafePointer<UInt8>, _ b: UnsafePointer<UInt8>, _ count: Int) -> Bool {
        var index = 0
        while index < count {
            if a[index] != b[index] { return false }
            index += 1
        }
        return true
    }

    /// `Swift` or `_Concurrency`: the standard library's modules, whose qualification no name shows.
    private static func isStandardLibrary(_ word: UnsafePointer<UInt8>, _ length: Int) -> Bool {
        (length == 5 && startsWith(swiftModule, word, length))
            || (length == 12 && startsWith(concurrencyModule, word, length))
    }

    private static let swiftModule = Array("Swift".utf8)
    private static let concurrencyModule = Array("_Concurrency".utf8)
    private static let unknownContext = Array("(unknown context at ".utf8)
    private static let (dot, openParenthesis, closeParenthesis): (UInt8, UInt8, UInt8) = (0x2E, 0x28, 0x29)

    /// By byte: whether it can be part of an identifier (letters, digits, `_` and any byte of a
    /// non-ASCII character, since identifiers may use Unicode).
    private static let identifierBytes: [Bool] = (0...255).map { byte in
        switch UInt8(byte) {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "_"): true
        case UInt8(ascii: "0")...UInt8(ascii: "9"): true
        default: byte >= 0x80
        }
    }
}

extension TypeName {
    /// The value type names of many keys, each value type's made once where its keys' modules cannot
    /// change it (`Int`, `[String]`, a type of the value's own module): most graphs use a few value
    /// types many times over.
    struct ValueTypeNames {
        private enum Entry {
            case fixed(String)
            case readsDifferentlyPerKey
        }

        private var entries: [ObjectIdentifier: Entry] = [:]

        /// The name of `key`'s value type, as ``ServiceKey/valueTypeName`` spells it.
        mutating func name(for key: any ServiceKey.Type) -> String {
            // A factory with arguments holds a function: named by its arguments and what it makes.
            if let factory = key as? any ArgumentFactoryKey.Type {
                let effects = factory.isSynchronousForm ? "throws" : "async throws"
                return "(\(factory.argumentNames.joined(separator: ", "))) \(effects) -> \(name(for: factory.product))"
            }
            let valueType = key.valueTypeID
            switch entries[valueType] {
            case .fixed(let name): return name
            case .readsDifferentlyPerKey: return key.valueTypeName
            case nil:
                let name = key.valueTypeName
                let plain = TypeName.display(key.valueType)
                entries[valueType] = TypeName.mentionsModule(plain) ? .readsDifferentlyPerKey : .fixed(plain)
                return name
            }
        }
    }
}
