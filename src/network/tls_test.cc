// TLS on the data plane's connections: who is refused, and how the refusal
// reads; the contexts' errors. Data flowing over TLS: DataPlaneTest/tls.
#include "network/tls.h"

#include <gtest/gtest.h>

#include <fstream>

#include "network/data_plane.h"
#include "tests/tls_certs.h"

namespace weir::network {
namespace tls_test {

constexpr int kCapacity = 4;

std::shared_ptr<const TlsContext> context(const TlsFiles& files, TlsContext::Role role, bool mutual) {
  auto c = TlsContext::create(files, role, mutual);
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? *c : nullptr;
}

class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(certs_.error, "");
    server_.set_tls(context(certs_.files(), TlsContext::Role::kServer, true),
                    context(certs_.files(), TlsContext::Role::kClient, false));
    ASSERT_TRUE(server_.listen("127.0.0.1", 0).ok());
  }

  const testing::TestCerts& certs_ = testing::test_certs();
  NetworkBufferPool pool_{8, 1024};
  DataPlane server_{"a-cluster-secret-of-some-length", &pool_, kCapacity};
};

TEST_F(TlsTest, APlainPeerIsRefused) {
  DataPlane plain("a-cluster-secret-of-some-length", &pool_, kCapacity);
  auto out = plain.outbound(server_.address(), ChannelKey{"job", 0, 0, 0, 0});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("closed during the handshake"), std::string_view::npos) << out.status();
}

TEST_F(TlsTest, APeerTrustingAnotherCaRefusesTheCertificate) {
  testing::TestCerts other = testing::make_test_certs(certs_.ca + ".other");
  ASSERT_EQ(other.error, "");
  DataPlane client("a-cluster-secret-of-some-length", &pool_, kCapacity);
  client.set_tls(context(other.files(), TlsContext::Role::kServer, true),
                 context(other.files(), TlsContext::Role::kClient, false));
  auto out = client.outbound(server_.address(), ChannelKey{"job", 0, 0, 0, 0});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("TLS handshake failed: its certificate: "), std::string_view::npos)
      << out.status();
}

TEST_F(TlsTest, APeerWithoutACertificateIsRefused) {
  // It trusts the server, but shows no certificate of its own.
  DataPlane client("a-cluster-secret-of-some-length", &pool_, kCapacity);
  client.set_tls(nullptr, context(TlsFiles{"", "", certs_.ca}, TlsContext::Role::kClient, false));
  auto out = client.outbound(server_.address(), ChannelKey{"job", 0, 0, 0, 0});
  EXPECT_FALSE(out.ok()) << "the server let in a peer without a certificate";
}

TEST(TlsContextTest, ErrorsNameTheFlagAndTheFile) {
  const testing::TestCerts& certs = testing::test_certs();
  ASSERT_EQ(certs.error, "");
  const std::string not_pem = certs.ca + ".txt";
  std::ofstream(not_pem) << "hello\n";
  testing::TestCerts other = testing::make_test_certs(certs.ca + ".mismatch");
  ASSERT_EQ(other.error, "");
  struct Case {
    TlsFiles files;
    std::string message;
  };
  for (const Case& c : {Case{{"/no/such.pem", certs.key, certs.ca}, "--tls-cert /no/such.pem: cannot read"},
                        Case{{certs.cert, not_pem, certs.ca}, "--tls-key " + not_pem + ": not a PEM file"},
                        Case{{certs.cert, other.key, certs.ca}, "--tls-key " + other.key + " does not match --tls-cert"},
                        Case{{certs.cert, certs.key, ""}, "TLS needs --tls-ca"}}) {
    auto ctx = TlsContext::create(c.files, TlsContext::Role::kServer, /*require_client_cert=*/true);
    ASSERT_FALSE(ctx.ok()) << c.message;
    EXPECT_NE(ctx.status().message().find(c.message), std::string_view::npos) << ctx.status();
  }
  EXPECT_TRUE(check_cluster_tls({}).ok());
  auto partial = check_cluster_tls({certs.cert, "", certs.ca});
  ASSERT_FALSE(partial.ok());
  EXPECT_EQ(partial.message(), "TLS needs --tls-cert, --tls-key and --tls-ca together; missing: --tls-key");
}

}  // namespace tls_test
}  // namespace weir::network
