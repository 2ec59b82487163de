@testable import ServiceGraph
import Testing

// `ScopeSeed.init` takes a caller's seed for a plain value, with no hooks to claim, when its key's Value
// is a struct or an enum other than Optional (read from the type's metadata kind). Everything else must
// be cast for its hooks: a wrong answer either way would run or skip hooks on a caller's instance.

private struct PlainStruct: Sendable { let words: (Int, Int, Int, Int, Int) }
private struct GenericStruct<T: Sendable>: Sendable { let value: T }
private enum PlainEnum: Sendable {
    case one
    case two(String)
}
private final class AClass: Sendable {}
private protocol AProtocol: Sendable {}

@Suite("What a seed takes for a plain value")
struct PlainSeedValueTypeTests {
    @Test func structsAndEnumsArePlain() {
        #expect(ScopeSeed._isPlainValueType(PlainStruct.self))
        #expect(ScopeSeed._isPlainValueType(GenericStruct<String>.self))
        #expect(ScopeSeed._isPlainValueType(GenericStruct<AClass>.self))
        #expect(ScopeSeed._isPlainValueType(PlainEnum.self))
        #expect(ScopeSeed._isPlainValueType(Int.self))
        #expect(ScopeSeed._isPlainValueType(String.self))
        #expect(ScopeSeed._isPlainValueType([Int].self))
        #expect(ScopeSeed._isPlainValueType(Never.self))
    }

    @Test func everythingElseIsCastForItsHooks() {
        #expect(!ScopeSeed._isPlainValueType(AClass.self))
        #expect(!ScopeSeed._isPlainValueType(HookedClassForSeeds.self))
        #expect(!ScopeSeed._isPlainValueType(Int?.self))
        #expect(!ScopeSeed._isPlainValueType(PlainStruct?.self))
        #expect(!ScopeSeed._isPlainValueType((any AProtocol).self))
        #expect(!ScopeSeed._isPlainValueType((any Sendable).self))
        #expect(!ScopeSeed._isPlainValueType((any AnyObject & Sendable).self))
        #expect(!ScopeSeed._isPlainValueType((Int, String).self))
        #expect(!ScopeSeed._isPlainValueType((@Sendable () -> Void).self))
        #expect(!ScopeSeed._isPlainValueType(Int.Type.self))
    }

    /// The test agrees with the classes the runtime knows: no class is ever taken for a plain value.
    @Test func noClassIsPlain() {
        let classes: [Any.Type] = [AClass.self, HookedClassForSeeds.self, ServiceGraph.self, ServiceScope.self]
        for type in classes {
            #expect(type is AnyObject.Type)
            #expect(!ScopeSeed._isPlainValueType(type), "\(type)")
        }
    }
}

private final class HookedClassForSeeds: LifecycleHooks, Sendable {}
