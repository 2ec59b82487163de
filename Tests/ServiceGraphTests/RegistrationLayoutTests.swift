@testable import ServiceGraph
import Testing
import ServiceGraphTestSupport

/// A registration is copied each time the builder's list grows and kept until the build ends: its size
/// is part of the startup and memory cost per service (see the Benchmarks README).
@Suite("The size of a registration")
struct RegistrationLayoutTests {
    #if arch(x86_64) || arch(arm64)
    @Test("a registration fits in 168 bytes on a 64-bit platform")
    func registrationStride() {
        #expect(MemoryLayout<Registration>.stride <= 168)
    }
    #endif

    @Test("the one-bit facts are independent of each other")
    func flagsAreIndependent() {
        var builder = ServiceGraph.Builder()
        builder.provide(IntKey.self) { 1 }
        var registration = builder.registrations[0]
        registration.isSeed = true
        registration.isPairedForm = true
        #expect(registration.isSeed && registration.isPairedForm)
        #expect(!registration.isInherited && !registration.isWrapperKey && !registration.inheritsLifetime)
        #expect(!registration.borrowsParentInstance && !registration.isCreatedOnFirstUse)
        registration.isSeed = false
        #expect(!registration.isSeed && registration.isPairedForm)
    }
}
