#include "messages/error_code.hpp"

#include "core/errors.hpp"

#include <c10/util/Exception.h>
#include <caf/actor_system_config.hpp>
#include <caf/message.hpp>

namespace troupe {

std::string to_string(errc x) {
  switch (x) {
    case errc::torch_error:
      return "torch_error";
    case errc::diverged:
      return "diverged";
    case errc::protocol_error:
      return "protocol_error";
    case errc::internal:
      return "internal";
    case errc::data:
      return "data";
  }
  return "unknown";
}

bool is_error(const caf::error& e, errc x) {
  return e.category() == caf::detail::error_factory<errc>::category &&
         e.code() == static_cast<uint8_t>(x);
}

caf::error protocol_violation(std::string what) {
  return caf::make_error(errc::protocol_error, std::move(what));
}

caf::error make_error_from_exception(const std::exception_ptr& ep) {
  try {
    std::rethrow_exception(ep);
  } catch (const c10::Error& e) {
    return caf::make_error(errc::torch_error, std::string(e.what_without_backtrace()));
  } catch (const protocol_error& e) {
    return protocol_violation(e.what());
  } catch (const diverged_error& e) {
    return caf::make_error(errc::diverged, std::string(e.what()));
  } catch (const data_error& e) {
    return caf::make_error(errc::data, std::string(e.what()));
  } catch (const std::exception& e) {
    return caf::make_error(errc::internal, std::string(e.what()));
  } catch (...) {
    return caf::make_error(errc::internal, std::string("unknown exception"));
  }
}

void add_error_category(caf::actor_system_config& cfg) {
  cfg.add_error_category(caf::atom("troupe"),
                         [](uint8_t code, caf::atom_value, const caf::message& context) {
                           auto text = to_string(static_cast<errc>(code));
                           if (context.match_element<std::string>(0))
                             text += ": " + context.get_as<std::string>(0);
                           return text;
                         });
}

}  // namespace troupe
