#include "hw/verbs/verbs_api.h"

#include <arpa/inet.h>

#include <cctype>
#include <cstdio>

namespace fabtwin::hw {

bool Gid::is_zero() const {
  for (uint8_t b : raw)
    if (b != 0) return false;
  return true;
}

bool Gid::is_ipv4_mapped() const {
  for (int i = 0; i < 10; ++i)
    if (raw[i] != 0) return false;
  return raw[10] == 0xff && raw[11] == 0xff;
}

bool Gid::is_link_local() const {
  return raw[0] == 0xfe && (raw[1] & 0xc0) == 0x80;
}

std::string Gid::to_string() const {
  char text[40];
  int at = 0;
  for (int group = 0; group < 8; ++group)
    at += std::snprintf(text + at, sizeof text - at, group ? ":%02x%02x" : "%02x%02x",
                        raw[2 * group], raw[2 * group + 1]);
  return std::string(text, at);
}

Gid Gid::parse(const std::string& text) {
  std::string trimmed = text;
  while (!trimmed.empty() && std::isspace(static_cast<unsigned char>(trimmed.back())))
    trimmed.pop_back();
  Gid gid;
  if (inet_pton(AF_INET6, trimmed.c_str(), gid.raw.data()) != 1)
    throw std::invalid_argument("not a GID (16-byte IPv6 address): '" + trimmed + "'");
  return gid;
}

const char* to_string(GidType type) {
  switch (type) {
    case GidType::InfiniBand:
      return "IB";
    case GidType::RoCEv1:
      return "RoCE v1";
    case GidType::RoCEv2:
      return "RoCE v2";
  }
  return "?";
}

const char* to_string(WcStatus status) {
  switch (status) {
    case WcStatus::Success:
      return "success";
    case WcStatus::LocalLengthError:
      return "local length error";
    case WcStatus::LocalQpOperationError:
      return "local QP operation error";
    case WcStatus::LocalProtectionError:
      return "local protection error";
    case WcStatus::WrFlushError:
      return "work request flushed";
    case WcStatus::RemoteInvalidRequestError:
      return "remote invalid request error";
    case WcStatus::RemoteAccessError:
      return "remote access error";
    case WcStatus::RemoteOperationError:
      return "remote operation error";
    case WcStatus::RetryExceeded:
      return "transport retry counter exceeded";
    case WcStatus::RnrRetryExceeded:
      return "RNR retry counter exceeded";
    case WcStatus::GeneralError:
      return "general error";
  }
  return "?";
}

const char* to_string(QpState state) {
  switch (state) {
    case QpState::Reset:
      return "RESET";
    case QpState::Init:
      return "INIT";
    case QpState::ReadyToReceive:
      return "RTR";
    case QpState::ReadyToSend:
      return "RTS";
    case QpState::SendQueueDrained:
      return "SQD";
    case QpState::SendQueueError:
      return "SQE";
    case QpState::Error:
      return "ERR";
  }
  return "?";
}

bool is_valid_path_mtu(int bytes) {
  return bytes == 256 || bytes == 512 || bytes == 1024 || bytes == 2048 || bytes == 4096;
}

}  // namespace fabtwin::hw
