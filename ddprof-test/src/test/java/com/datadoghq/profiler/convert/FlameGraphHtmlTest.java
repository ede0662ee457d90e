package com.datadoghq.profiler.convert;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.awt.image.BufferedImage;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import javax.imageio.ImageIO;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.testing.ChildJvm;
import com.datadoghq.profiler.testing.CpuBurner;
import com.datadoghq.profiler.testing.JfrReader;
import com.datadoghq.profiler.testing.TestEnv;
import jdk.jfr.consumer.RecordedEvent;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@code convert --to html}: the page is one self-contained file whose embedded data carries
 * the recording's totals, and, in headless Chromium (Debian's {@code chromium}; the browser
 * tests are skipped, saying so, where it is not installed), the hot method's box is drawn and
 * a search highlights it.
 */
class FlameGraphHtmlTest {
    static final String CHAIN_C = CpuBurner.class.getName() + ".chainC";
    /** The page's colour for frames matching the search (CSS {@code .f.match}). */
    static final int MATCH_RGB = 0xee00ee;

    static Path dir;
    static Path html;
    static List<RecordedEvent> samples;
    static String thread;

    @BeforeAll
    static void recordAndConvert() throws Exception {
        dir = Files.createTempDirectory("ddprof-html-");
        Path jfr = dir.resolve("rec.jfr");
        JavaProfiler profiler = TestEnv.profiler();
        TestEnv.stopQuietly(profiler);
        profiler.execute("start,cpu=10ms,file=" + jfr);
        thread = Thread.currentThread().getName();
        try {
            CpuBurner.burn(600);
        } finally {
            profiler.stop();
        }
        samples = JfrReader.executionSamples(jfr);
        html = dir.resolve("flame.html");
        ChildJvm.Result r = new ChildJvm()
                .jvmArgs("-jar", TestEnv.toolsJar().toString(), "convert", "--to", "html", jfr.toString(), html.toString())
                .run(dir);
        assertEquals(0, r.exitCode, r.describe());
    }

    @AfterAll
    static void cleanUp() throws IOException {
        TestEnv.deleteTree(dir);
    }

    @Test
    void pageIsSelfContainedAndCarriesTheRecordingsTotals() throws IOException {
        String page = new String(Files.readAllBytes(html), StandardCharsets.UTF_8);
        // Nothing fetched from elsewhere: no external script, style sheet, image or font.
        Matcher external = Pattern.compile("(?i)(src|href)\\s*=\\s*[\"']?(https?:|//)|@import|url\\(\\s*[\"']?https?:")
                .matcher(page);
        assertFalse(external.find(), "external reference: " + (external.find(0) ? external.group() : ""));
        Matcher data = Pattern.compile("<script id=\"profile-data\" type=\"application/json\">(.*?)</script>",
                Pattern.DOTALL).matcher(page);
        assertTrue(data.find(), "embedded profile data");
        String json = data.group(1);
        long weight = samples.stream().mapToLong(ConvertTest::weightOf).sum();
        assertTrue(json.contains("\"total\":" + weight + ","), "total " + weight + " in " + head(json));
        assertTrue(json.contains("\"" + CHAIN_C + "\""), "the hot method's name");
        // Frame types for the colour legend, and the page's controls.
        assertTrue(json.contains("\"types\":["), head(json));
        for (String control : Arrays.asList("id=\"search\"", "id=\"threads\"", "id=\"icicle\"", "id=\"legend\"",
                "id=\"reset\"")) {
            assertTrue(page.contains(control), control);
        }
    }

    static String head(String s) {
        return s.length() < 400 ? s : s.substring(0, 400) + "...";
    }

    static String chromium() {
        for (String name : new String[] {"chromium", "chromium-browser", "google-chrome"}) {
            for (String dirName : System.getenv().getOrDefault("PATH", "/usr/bin").split(File.pathSeparator)) {
                File f = new File(dirName, name);
                if (f.canExecute()) {
                    return f.getPath();
                }
            }
        }
        return null;
    }

    /** Runs headless Chromium on the page with the given fragment and extra arguments; returns stdout. */
    static String browse(String fragment, String... args) throws Exception {
        return browse(html, fragment, args);
    }

    static String browse(Path html, String fragment, String... args) throws Exception {
        return browse(dir, html, fragment, args);
    }

    /** As {@link #browse(String, String...)}, for another test's page, with its files in {@code dir}. */
    static String browse(Path dir, Path html, String fragment, String... args) throws Exception {
        String browser = chromium();
        Assumptions.assumeTrue(browser != null,
                "Chromium is not installed (apt-get install chromium): browser checks of the HTML page skipped");
        List<String> cmd = new ArrayList<>(Arrays.asList(browser, "--headless", "--no-sandbox", "--disable-gpu",
                "--hide-scrollbars", "--user-data-dir=" + dir.resolve("chromium-profile"),
                "--virtual-time-budget=5000"));
        cmd.addAll(Arrays.asList(args));
        cmd.add(html.toUri() + fragment);
        Path out = dir.resolve("chromium.out");
        Process p = new ProcessBuilder(cmd).redirectOutput(out.toFile())
                .redirectError(dir.resolve("chromium.err").toFile()).start();
        assertTrue(p.waitFor(3, TimeUnit.MINUTES), "chromium did not finish");
        assertEquals(0, p.exitValue(), "chromium: " + new String(Files.readAllBytes(dir.resolve("chromium.err"))));
        return new String(Files.readAllBytes(out), StandardCharsets.UTF_8);
    }

    /** The text of the frame boxes (div.f) in a dumped DOM whose class list is exactly {@code cls}. */
    static List<String> boxes(String dom, String cls) {
        List<String> names = new ArrayList<>();
        Matcher m = Pattern.compile("<div class=\"" + cls + "\"[^>]*>([^<]*)</div>").matcher(dom);
        while (m.find()) {
            names.add(m.group(1));
        }
        return names;
    }

    @Test
    void chromiumDrawsTheHotMethodAndSearchHighlightsIt() throws Exception {
        String dom = browse("#icicle=1", "--dump-dom");
        long weight = samples.stream().mapToLong(ConvertTest::weightOf).sum();
        assertTrue(dom.contains("data-rendered=\"" + weight + "\""), "the script ran over all samples");
        assertTrue(boxes(dom, "f").contains(CHAIN_C), "a box for " + CHAIN_C);
        assertTrue(boxes(dom, "f match").isEmpty(), "nothing highlighted without a search");

        dom = browse("#icicle=1&search=chainC", "--dump-dom");
        List<String> matched = boxes(dom, "f match");
        assertTrue(matched.contains(CHAIN_C), "search highlights " + CHAIN_C + ": " + matched);
        assertTrue(matched.stream().allMatch(n -> n.contains("chainC")), "only matches: " + matched);
        assertTrue(dom.contains("matched: "), "the matched share is shown");

        // Per thread: a root box per thread, named as collapsed --threads names it.
        dom = browse("#icicle=1&threads=1", "--dump-dom");
        assertTrue(boxes(dom, "f").stream().anyMatch(n -> n.startsWith(thread + " tid=")),
                "a box for the thread " + thread);
    }

    /** A frame box of a dumped DOM: its text, frame type and distance from the graph's top. */
    static final class Box {
        final String name;
        final String type;
        final int top;

        Box(String name, String type, int top) {
            this.name = name;
            this.type = type;
            this.top = top;
        }

        String name() {
            return name;
        }

        String type() {
            return type;
        }

        int top() {
            return top;
        }

        @Override
        public String toString() {
            return name + "[" + type + "]@" + top;
        }
    }

    static List<Box> frameBoxes(String dom) {
        List<Box> out = new ArrayList<>();
        Matcher m = Pattern.compile("<div class=\"f[^\"]*\"([^>]*)>([^<]*)</div>").matcher(dom);
        while (m.find()) {
            Matcher type = Pattern.compile("data-type=\"([^\"]*)\"").matcher(m.group(1));
            Matcher top = Pattern.compile("top: (\\d+)px").matcher(m.group(1));
            out.add(new Box(m.group(2), type.find() ? type.group(1) : "", top.find() ? Integer.parseInt(top.group(1)) : -1));
        }
        return out;
    }

    @Test
    void titleCountsWhatTheBoxesCount() throws Exception {
        String page = Files.readString(html);
        long weight = samples.stream().mapToLong(ConvertTest::weightOf).sum();
        assertTrue(page.contains("<title>cpu profile: " + weight + " samples"), "the title's total is the weights' "
                + weight + ": " + head(page.substring(page.indexOf("<title>"))));
    }

    /**
     * The page on a profile of known shape: a method run interpreted and JIT compiled under the same
     * caller is two boxes, one per type (a tree merged by name alone drew both as the first type
     * seen); zoomed on a shallow frame, the view is as tall as what it shows, with no blank rows above.
     */
    @Test
    void framesAreKeyedByNameAndTypeAndAZoomedViewHasNoBlankRows() throws Exception {
        String synthetic = "{\"title\":\"t\",\"kind\":\"cpu\",\"unit\":\"samples\",\"total\":10,"
                + "\"threadsDefault\":false,"
                + "\"names\":[\"Main.run\",\"A.m\",\"B.deep\",\"C.deeper\",\"D.shallow\"],"
                + "\"types\":[\"JIT compiled\",\"Interpreted\"],"
                + "\"frames\":[[0,0],[1,1],[1,0],[2,0],[3,0],[4,0]],\"threads\":[],"
                + "\"stacks\":[[-1,3,0,1],[-1,5,0,2,3,4],[-1,2,0,5]]}";
        String page = Files.readString(html).replaceFirst(
                "(<script id=\"profile-data\" type=\"application/json\">)[\\s\\S]*?(</script>)",
                "$1" + Matcher.quoteReplacement(synthetic) + "$2");
        Path known = dir.resolve("known.html");
        Files.writeString(known, page);

        List<Box> boxes = frameBoxes(browse(known, "#icicle=1", "--dump-dom"));
        List<String> typesOfM = boxes.stream().filter(b -> b.name().equals("A.m")).map(Box::type).sorted()
                .collect(java.util.stream.Collectors.toList());
        assertEquals(List.of("Interpreted", "JIT compiled"), typesOfM, "boxes: " + boxes);

        // Flame orientation, zoomed on D.shallow (all > Main.run > D.shallow): three rows, the top one at 0.
        boxes = frameBoxes(browse(known, "#zoom=D.shallow", "--dump-dom"));
        assertEquals(0, boxes.stream().mapToInt(Box::top).min().orElse(-1), "blank rows above the zoomed view: " + boxes);
        assertEquals(36, boxes.stream().mapToInt(Box::top).max().orElse(-1), "three rows: " + boxes);
    }

    @Test
    void screenshotShowsTheHighlightedBox() throws Exception {
        Path png = dir.resolve("flame.png");
        browse("#icicle=1&search=chainC", "--window-size=1200,2400", "--screenshot=" + png);
        BufferedImage image = ImageIO.read(png.toFile());
        int highlighted = 0;
        for (int y = 0; y < image.getHeight(); y++) {
            for (int x = 0; x < image.getWidth(); x++) {
                if ((image.getRGB(x, y) & 0xffffff) == MATCH_RGB) {
                    highlighted++;
                }
            }
        }
        // chainC holds most of the samples: its box spans a good part of the width.
        assertTrue(highlighted > 1200 * 5, "highlighted pixels: " + highlighted);
    }

    /** Burns {@code millis} of this thread's CPU in a method the base recording never ran. */
    static double otherSpin(long millis) {
        com.datadoghq.profiler.testing.CpuBudget budget = com.datadoghq.profiler.testing.CpuBudget.of(millis);
        double r = 1;
        while (budget.left()) {
            for (int i = 1; i < 100_000; i++) {
                r = r * 0.999998 + 2.0 / i;
            }
        }
        return r;
    }

    /** A recording of this thread burning CPU in {@link #otherSpin}, then in CpuBurner's chain. */
    static void recordBurn(Path file, long otherMillis, long chainMillis) throws Exception {
        JavaProfiler profiler = TestEnv.profiler();
        TestEnv.stopQuietly(profiler);
        profiler.execute("start,cpu=10ms,file=" + file);
        try {
            if (otherMillis > 0) {
                CpuBurner.sink = otherSpin(otherMillis);
            }
            CpuBurner.burn(chainMillis);
        } finally {
            profiler.stop();
        }
    }

    /**
     * {@code --diff BASE}: the base recording burns in CpuBurner's chain only; the new one, made through
     * the same calls, spends about half its CPU in {@link #otherSpin} first. A box's path of method
     * names from the root (its frame types aside: the JIT compiles chainC between the two runs) is
     * compared with the base's same path: otherSpin's box is red (its share grew from nothing) and
     * chainC's blue (its share fell), each carrying the change in points of the whole; the embedded
     * base total is the base's weights.
     */
    @Test
    void differentialGraphColoursWhatGrewRedAndWhatShrankBlue() throws Exception {
        Path base = dir.resolve("base.jfr");
        Path now = dir.resolve("now.jfr");
        recordBurn(base, 0, 500);
        recordBurn(now, 400, 400);
        String other = FlameGraphHtmlTest.class.getName() + ".otherSpin";
        List<RecordedEvent> nowSamples = JfrReader.executionSamples(now);
        long inOther = nowSamples.stream().filter(e -> JfrReader.frames(e).stream()
                .anyMatch(f -> (f.getMethod().getType().getName().replace('/', '.') + "." + f.getMethod().getName())
                        .equals(other))).count();
        assertTrue(inOther > 0, "the new recording has samples in " + other);

        Path diff = dir.resolve("diff.html");
        ChildJvm.Result r = new ChildJvm()
                .jvmArgs("-jar", TestEnv.toolsJar().toString(), "convert", "--to", "html", "--diff",
                        base.toString(), now.toString(), diff.toString())
                .run(dir);
        assertEquals(0, r.exitCode, r.describe());
        String page = Files.readString(diff);
        long baseWeight = JfrReader.executionSamples(base).stream().mapToLong(ConvertTest::weightOf).sum();
        assertTrue(page.contains("\"base\":{\"total\":" + baseWeight + ","), "the base's total " + baseWeight);

        String dom = browse(diff, "#icicle=1", "--dump-dom");
        double otherDelta = delta(dom, other);
        double chainDelta = delta(dom, CHAIN_C);
        assertTrue(otherDelta > 0, other + " grew: " + otherDelta);
        assertTrue(chainDelta < 0, CHAIN_C + " shrank: " + chainDelta);
        int[] otherRgb = background(dom, other);
        int[] chainRgb = background(dom, CHAIN_C);
        assertTrue(otherRgb[0] == 255 && otherRgb[2] < 255, other + " is red: " + Arrays.toString(otherRgb));
        assertTrue(chainRgb[2] == 255 && chainRgb[0] < 255, CHAIN_C + " is blue: " + Arrays.toString(chainRgb));

        // diff=0: the frame-type colours again.
        dom = browse(diff, "#icicle=1&diff=0", "--dump-dom");
        int[] typed = background(dom, CHAIN_C);
        assertFalse(typed[2] == 255 && typed[0] < 255, "frame-type colour with diff=0: " + Arrays.toString(typed));
    }

    /** The widest box named {@code name}: its opening tag in the dumped DOM. */
    static String boxTag(String dom, String name) {
        Matcher m = Pattern.compile("<div class=\"f[^\"]*\"([^>]*)>" + Pattern.quote(name) + "</div>").matcher(dom);
        String best = null;
        double widest = -1;
        while (m.find()) {
            Matcher w = Pattern.compile("width: ([0-9.]+)%").matcher(m.group(1));
            double width = w.find() ? Double.parseDouble(w.group(1)) : 0;
            if (width > widest) {
                widest = width;
                best = m.group(1);
            }
        }
        assertTrue(best != null, "a box for " + name);
        return best;
    }

    static double delta(String dom, String name) {
        Matcher m = Pattern.compile("data-delta=\"(-?[0-9.]+)\"").matcher(boxTag(dom, name));
        assertTrue(m.find(), "data-delta on " + name);
        return Double.parseDouble(m.group(1));
    }

    static int[] background(String dom, String name) {
        Matcher m = Pattern.compile("background: rgb\\((\\d+), (\\d+), (\\d+)\\)").matcher(boxTag(dom, name));
        assertTrue(m.find(), "a background colour on " + name);
        return new int[] {Integer.parseInt(m.group(1)), Integer.parseInt(m.group(2)), Integer.parseInt(m.group(3))};
    }
}
