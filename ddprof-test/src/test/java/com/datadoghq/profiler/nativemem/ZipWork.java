package com.datadoghq.profiler.nativemem;

import java.util.zip.DataFormatException;
import java.util.zip.Deflater;
import java.util.zip.Inflater;

/**
 * Native allocations without JNI of our own: every Deflater and Inflater mallocs its zlib state
 * (a Deflater's window, hash chains and pending buffer are about 256 KiB) inside libzip/libz, and
 * {@code end()} frees it.
 */
final class ZipWork {
    private ZipWork() {
    }

    /** The Java caller the samples' stacks must reach. */
    static long zipCaller(int rounds) {
        long total = 0;
        byte[] input = new byte[64 * 1024];
        for (int i = 0; i < input.length; i++) {
            input[i] = (byte) (i * 31 >> 3);
        }
        byte[] packed = new byte[input.length + 1024];
        byte[] unpacked = new byte[input.length];
        for (int r = 0; r < rounds; r++) {
            Deflater d = new Deflater();
            d.setInput(input);
            d.finish();
            int n = d.deflate(packed);
            d.end();
            Inflater inf = new Inflater();
            inf.setInput(packed, 0, n);
            try {
                total += inf.inflate(unpacked);
            } catch (DataFormatException e) {
                throw new IllegalStateException(e);
            }
            inf.end();
        }
        return total;
    }
}
