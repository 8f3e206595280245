/// A fixed sequence of random numbers (xorshift64), so a randomized test covers the same cases each run.
struct Xorshift: RandomNumberGenerator {
    var state: UInt64

    mutating func next() -> UInt64 {
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        return state
    }
}
