// The cross-site rules of a keyless server (request_origin.h), case by case.
#include <gtest/gtest.h>

#include "server/request_origin.h"

using namespace cria::server;

TEST(RequestOrigin, OnlyOurOwnPageAndTheAllowedOriginMayCall) {
    const OriginPolicy p{"127.0.0.1", 8080, "https://app.example"};
    EXPECT_TRUE(origin_allowed(p, ""));  // not a browser, or same-origin GET
    EXPECT_TRUE(origin_allowed(p, "http://127.0.0.1:8080"));
    EXPECT_TRUE(origin_allowed(p, "http://LOCALHOST:8080"));
    EXPECT_TRUE(origin_allowed(p, "http://[::1]:8080"));
    EXPECT_TRUE(origin_allowed(p, "https://APP.example"));
    EXPECT_FALSE(origin_allowed(p, "http://127.0.0.1:8081"));  // another local service
    EXPECT_FALSE(origin_allowed(p, "http://127.0.0.1"));       // port 80
    EXPECT_FALSE(origin_allowed(p, "https://127.0.0.1:8080")); // another scheme
    EXPECT_FALSE(origin_allowed(p, "null"));
    EXPECT_FALSE(origin_allowed(p, "http://127.0.0.1:8080.evil.example"));
    EXPECT_FALSE(origin_allowed(p, "http://evil.example"));
}

TEST(RequestOrigin, ALoopbackServerAnswersOnlyToLoopbackHostNames) {
    const OriginPolicy p{"127.0.0.1", 8080, ""};
    EXPECT_EQ(cross_site_refusal(p, "", "127.0.0.1:8080"), "");
    EXPECT_EQ(cross_site_refusal(p, "", "localhost:8080"), "");
    EXPECT_EQ(cross_site_refusal(p, "", "[::1]:8080"), "");
    EXPECT_EQ(cross_site_refusal(p, "", ""), "");  // HTTP/1.0
    EXPECT_NE(cross_site_refusal(p, "", "rebind.evil.example:8080"), "");
    EXPECT_NE(cross_site_refusal(p, "", "localhost:9"), "");
    EXPECT_NE(cross_site_refusal(p, "", "localhost:80x"), "");
    EXPECT_NE(cross_site_refusal(p, "http://evil.example", "127.0.0.1:8080"), "");
    // Bound to every address on purpose: any Host, but still no foreign origin.
    const OriginPolicy open{"0.0.0.0", 8080, ""};
    EXPECT_EQ(cross_site_refusal(open, "", "192.0.2.7:8080"), "");
    EXPECT_NE(cross_site_refusal(open, "http://evil.example", "192.0.2.7:8080"), "");
}

TEST(RequestOrigin, JsonContentTypes) {
    EXPECT_TRUE(is_json_content_type("application/json"));
    EXPECT_TRUE(is_json_content_type("Application/JSON; charset=utf-8"));
    EXPECT_FALSE(is_json_content_type("text/plain"));
    EXPECT_FALSE(is_json_content_type("application/x-www-form-urlencoded"));
    EXPECT_FALSE(is_json_content_type(""));
    EXPECT_FALSE(is_json_content_type("application/jsonp"));
}
