// Decoding untrusted image bytes: supported formats decode, anything else
// (unknown bytes, WebP, corrupt data, sizes over the limits) is a cria::Error
// with a clear message, refused before pixel memory is allocated.

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "cria/core/error.h"
#include "cria/vision/image.h"

namespace cria::vision {
namespace {

void expect_error(std::span<const uint8_t> bytes, const std::string& part, const ImageLimits& limits = {}) {
    try {
        decode_image(bytes, "test-image", limits);
        FAIL() << "accepted, expected an error with: " << part;
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("test-image"), std::string::npos) << e.what();
    }
}

// A 24-bit BMP with a BITMAPINFOHEADER, bottom-up rows padded to 4 bytes.
std::vector<uint8_t> bmp(int32_t width, int32_t height, bool with_pixels = true) {
    const uint32_t row = (static_cast<uint32_t>(width) * 3 + 3) & ~3u;
    const uint32_t data = with_pixels ? row * static_cast<uint32_t>(height) : 0;
    std::vector<uint8_t> b(54 + data);
    auto put32 = [&](size_t at, uint32_t v) { std::memcpy(b.data() + at, &v, 4); };
    b[0] = 'B';
    b[1] = 'M';
    put32(2, static_cast<uint32_t>(b.size()));
    put32(10, 54);
    put32(14, 40);
    put32(18, static_cast<uint32_t>(width));
    put32(22, static_cast<uint32_t>(height));
    b[26] = 1;   // planes
    b[28] = 24;  // bits per pixel
    put32(34, data);
    for (uint32_t y = 0; with_pixels && y < static_cast<uint32_t>(height); ++y)
        for (uint32_t x = 0; x < static_cast<uint32_t>(width); ++x) {
            uint8_t* p = b.data() + 54 + y * row + x * 3;  // BGR
            p[0] = static_cast<uint8_t>(x);
            p[1] = static_cast<uint8_t>(y);
            p[2] = 200;
        }
    return b;
}

TEST(ImageDecode, DecodesABmpAsRgbTopDown) {
    const RgbImage img = decode_image(bmp(5, 3), "bmp");
    ASSERT_EQ(img.width, 5);
    ASSERT_EQ(img.height, 3);
    // BMP rows are stored bottom-up and BGR: (x, y) on screen is file row 2 - y.
    EXPECT_EQ(img.at(4, 0, 0), 200);
    EXPECT_EQ(img.at(4, 0, 1), 2);
    EXPECT_EQ(img.at(4, 0, 2), 4);
}

TEST(ImageDecode, RefusesUnknownBytes) {
    const std::string text = "hello, this is not an image";
    expect_error({reinterpret_cast<const uint8_t*>(text.data()), text.size()}, "not a JPEG, PNG, BMP or GIF");
    expect_error({}, "not a JPEG, PNG, BMP or GIF");
}

TEST(ImageDecode, RefusesWebpClearly) {
    const std::string webp = std::string("RIFF\x24\0\0\0WEBPVP8 ", 16) + std::string(32, '\0');
    expect_error({reinterpret_cast<const uint8_t*>(webp.data()), webp.size()}, "WebP is not supported");
}

TEST(ImageDecode, RefusesSizesOverTheLimits) {
    // The header claims 100000 x 100000: refused from the header alone.
    expect_error(bmp(100000, 100000, false), "exceeds the side limit");
    ImageLimits small;
    small.max_pixels = 10;
    expect_error(bmp(5, 3), "exceeds the limit of 10 pixels", small);
}

TEST(ImageDecode, RefusesCorruptData) {
    auto b = bmp(5, 3);
    b.resize(60);  // the pixels are cut off
    // stb_image (like llama.cpp, which uses it) fills missing BMP pixels
    // with zeros rather than failing; what matters is that it stays in bounds.
    try {
        const RgbImage img = decode_image(b, "cut");
        EXPECT_EQ(img.pixels.size(), 5u * 3u * 3u);
    } catch (const Error&) {
    }
    const std::string png_sig = "\x89PNG\r\n\x1A\n";
    std::vector<uint8_t> png(png_sig.begin(), png_sig.end());
    png.resize(40, 0xAB);
    expect_error(png, "image");
    std::vector<uint8_t> jpeg{0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, 'J', 'F', 'I', 'F', 0};
    expect_error(jpeg, "image");
}

TEST(ImageDecode, PpmRoundTripsAndRefusesBadHeaders) {
    RgbImage img{2, 1, {1, 2, 3, 4, 5, 6}};
    const auto bytes = write_ppm(img);
    const RgbImage back = read_ppm(bytes, "ppm");
    EXPECT_EQ(back.pixels, img.pixels);
    EXPECT_EQ(back.width, 2);
    for (const std::string bad : {"P6\n2 1\n65535\n", "P6\n2 1\n255\n\x01", "P6\n99999 99999\n255\n", "P5\n2 1\n255\n", "P6\n#\n"}) {
        EXPECT_THROW(read_ppm({reinterpret_cast<const uint8_t*>(bad.data()), bad.size()}, "bad"), Error) << bad;
    }
}

}  // namespace
}  // namespace cria::vision
