#include "help_format.h"

#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"

namespace swapplan::cli {

std::string HelpFormatter::make_help(const CLI::App* app, std::string name,
                                     CLI::AppFormatMode mode) const {
  if (mode == CLI::AppFormatMode::Sub) return make_expanded(app);
  std::string out;
  if (app->get_name().empty() && app->get_parent() != nullptr &&
      app->get_group() != "Subcommands") {
    absl::StrAppend(&out, app->get_group(), ":");
  }
  absl::StrAppend(&out, make_description(app), make_usage(app, name), make_positionals(app),
                  make_groups(app, mode), make_subcommands(app, mode), "\n", make_footer(app));
  return out;
}

std::string HelpFormatter::make_footer(const CLI::App* app) const {
  const std::string footer = app->get_footer();
  return footer.empty() ? std::string() : footer + "\n";
}

std::string HelpFormatter::make_option_opts(const CLI::Option* opt) const {
  if (!opt->get_option_text().empty()) return " " + opt->get_option_text();
  std::string out;
  if (opt->get_type_size() != 0) {
    if (!opt->get_type_name().empty()) absl::StrAppend(&out, " ", get_label(opt->get_type_name()));
    if (!opt->get_default_str().empty()) absl::StrAppend(&out, "=", opt->get_default_str());
    if (opt->get_expected_max() == CLI::detail::expected_max_vector_size) {
      absl::StrAppend(&out, " ...");
    } else if (opt->get_expected_min() > 1) {
      absl::StrAppend(&out, " x ", opt->get_expected());
    }
    if (opt->get_required()) absl::StrAppend(&out, " ", get_label("REQUIRED"));
  }
  if (!opt->get_envname().empty()) {
    absl::StrAppend(&out, " (", get_label("Env"), ":", opt->get_envname(), ")");
  }
  if (!opt->get_needs().empty()) {
    absl::StrAppend(&out, " ", get_label("Needs"), ":");
    for (const CLI::Option* o : opt->get_needs()) absl::StrAppend(&out, " ", o->get_name());
  }
  if (!opt->get_excludes().empty()) {
    absl::StrAppend(&out, " ", get_label("Excludes"), ":");
    for (const CLI::Option* o : opt->get_excludes()) absl::StrAppend(&out, " ", o->get_name());
  }
  return out;
}

std::string HelpFormatter::make_subcommand(const CLI::App* sub) const {
  std::ostringstream out;
  CLI::detail::format_help(out, sub->get_display_name(true), sub->get_description(),
                           get_column_width());
  return out.str();
}

}  // namespace swapplan::cli
