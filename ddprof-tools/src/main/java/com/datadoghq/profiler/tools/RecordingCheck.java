package com.datadoghq.profiler.tools;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * Tells, before a tool hands a file to the JDK's parser, whether it is a whole JFR recording, so
 * that an empty, foreign or cut-short file gets one line saying which of these it is (the parser's
 * own exceptions say things like "Trying to read at 333435, but file is only 200000 bytes").
 *
 * <p>A recording is a sequence of chunks, each starting with {@code "FLR\0"}, u16 major, u16
 * minor and an i64 size that covers the whole chunk; the chunks must tile the file exactly.
 */
public final class RecordingCheck {
    private static final int MAGIC = 0x464c5200; // "FLR\0"
    /** Magic, versions, size, constant-pool, metadata offsets, start, duration. */
    private static final int MIN_HEADER = 48;

    private RecordingCheck() {
    }

    /**
     * Whether {@code file} is a regular file that begins with a chunk header's magic: a recording,
     * whole or not (the command lines tell a recording argument from an output by it).
     */
    public static boolean startsAsRecording(Path file) {
        if (!Files.isRegularFile(file)) {
            return false;
        }
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            ByteBuffer magic = ByteBuffer.allocate(4);
            while (magic.hasRemaining() && ch.read(magic) > 0) {
                // the first four bytes, or what the file has of them
            }
            return !magic.hasRemaining() && magic.getInt(0) == MAGIC;
        } catch (IOException e) {
            return false;
        }
    }

    /**
     * A tool's check of a recording argument: 0 when {@code file} is a whole recording, else 1 after
     * one line on {@code err} saying why not (no such file, unreadable, empty, foreign, cut short).
     */
    public static int checkOrSay(Path file, java.io.PrintStream err) {
        if (!Files.isRegularFile(file)) {
            err.println("No such file: " + file);
            return 1;
        }
        try {
            String problem = problem(file);
            if (problem != null) {
                err.println(problem);
                return 1;
            }
        } catch (IOException e) {
            err.println("Cannot read " + file + ": " + e.getMessage());
            return 1;
        }
        return 0;
    }

    /** Null when {@code file} is a sequence of whole chunks, else one line saying what is wrong. */
    public static String problem(Path file) throws IOException {
        long length = Files.size(file);
        if (length == 0) {
            return file + " is empty (0 bytes), not a JFR recording";
        }
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            ByteBuffer header = ByteBuffer.allocate(16);
            long at = 0;
            int chunk = 0;
            while (at < length) {
                chunk++;
                header.clear();
                while (header.hasRemaining() && ch.read(header, at + header.position()) > 0) {
                    // read the header's first 16 bytes, or what the file has of them
                }
                header.flip();
                if (header.remaining() >= 4 && header.getInt(0) != MAGIC) {
                    return chunk == 1
                            ? file + " is not a JFR recording (it does not start with a chunk header)"
                            : file + " has data that is not a JFR chunk at byte " + at
                                    + ", after " + (chunk - 1) + " whole chunk(s)";
                }
                if (header.remaining() < 16) {
                    return file + " is truncated: chunk " + chunk + "'s header is cut off after "
                            + (length - at) + " bytes";
                }
                long size = header.getLong(8);
                if (size < MIN_HEADER) {
                    return file + " is not a valid JFR recording (chunk " + chunk + " declares " + size
                            + " bytes)";
                }
                if (size > length - at) {
                    return file + " is truncated: chunk " + chunk + " declares " + size
                            + " bytes but the file has only " + (length - at)
                            + " from its start (cut short, or still being written)";
                }
                at += size;
            }
        }
        return null;
    }
}
