// Element i of a 4-d shape (the last dimension fastest) at the given element strides: the
// ops see every tensor as 4-d (leading sizes of 1), any strides, broadcast dimensions with
// stride 0.
uint strided_index(uint i, uvec4 shape, uvec4 strides) {
    const uint i3 = i % shape.w;
    i /= shape.w;
    const uint i2 = i % shape.z;
    i /= shape.z;
    const uint i1 = i % shape.y;
    const uint i0 = i / shape.y;
    return i0 * strides.x + i1 * strides.y + i2 * strides.z + i3 * strides.w;
}

// The flat element this invocation computes: workgroups of 256 along x, rows of them along y
// (a dispatch has at most 65535 workgroups a dimension).
uint flat_invocation() {
    return gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 256 + gl_GlobalInvocationID.x;
}
