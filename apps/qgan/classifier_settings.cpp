// qfleet-qgan classify's settings bound to classifier.json (common/settings.hpp): the one table
// of key -> field; ClassifierConfig::to_json, the command line's reading and validate() go
// through it.
#include <algorithm>
#include <stdexcept>

#include "classifier.hpp"
#include "qgan_config.hpp"  // generated: kClassifierJson, the text of classifier.json

namespace qfleet::qgan {

const app::Schema& classifier_schema() {
  static const app::Schema s(kClassifierJson);
  return s;
}

const std::vector<app::Setting<ClassifierConfig>>& classifier_settings() {
  using app::setting;
  using C = ClassifierConfig;
  static const std::vector<app::Setting<ClassifierConfig>> table = {
      setting<C>("devices", [](C& c) -> auto& { return c.device_files; }),
      setting<C>("noiseless", [](C& c) -> auto& { return c.noiseless; }),
      setting<C>("circuit", [](C& c) -> auto& { return c.circuit; }),
      setting<C>("qubits", [](C& c) -> auto& { return c.qubits; }),
      setting<C>("random_layers", [](C& c) -> auto& { return c.random_layers; }),
      setting<C>("generator_report", [](C& c) -> auto& { return c.generator_report; }),
      setting<C>("shots", [](C& c) -> auto& { return c.shots; }),
      setting<C>("train_records", [](C& c) -> auto& { return c.train_records; }),
      setting<C>("test_records", [](C& c) -> auto& { return c.test_records; }),
      setting<C>("bayes_records", [](C& c) -> auto& { return c.bayes_records; }),
      setting<C>("hidden", [](C& c) -> auto& { return c.hidden; }),
      setting<C>("epochs", [](C& c) -> auto& { return c.epochs; }),
      setting<C>("batch", [](C& c) -> auto& { return c.batch; }),
      setting<C>("lr", [](C& c) -> auto& { return c.lr; }),
      setting<C>("seed", [](C& c) -> auto& { return c.seed; }),
      setting<C>("threads", [](C& c) -> auto& { return c.threads; }),
      setting<C>("device", [](C& c) -> auto& { return c.device; }),
      setting<C>("save_records", [](C& c) -> auto& { return c.save_records; }),
      setting<C>("out", [](C& c) -> auto& { return c.out; }),
  };
  return table;
}

ClassifierConfig ClassifierConfig::from_settings(const nlohmann::json& resolved) { return app::read_settings(classifier_settings(), resolved); }

nlohmann::json ClassifierConfig::to_json() const {
  return app::write_settings(*this, classifier_settings(), {"threads", "save_records", "out"});  // (those do not decide the results)
}

void validate(const ClassifierConfig& c) {
  app::check_settings(c, classifier_settings(), classifier_schema());
  // What the schema cannot say: how many values a list holds, open intervals, memory, and
  // a setting one circuit needs.
  auto bad = [](const std::string& what) { throw std::invalid_argument(what); };
  if (c.shots.empty() || c.shots.size() > 32) bad("shots: 1 to 32 shot counts");
  const int64_t biggest = *std::max_element(c.shots.begin(), c.shots.end());
  // The engine's samples of one device and split are held at once (8 bytes each).
  const int64_t per_device = std::max(c.train_records, c.test_records);
  if (per_device > (int64_t{1} << 27) / biggest)
    bad("records x shots: " + std::to_string(per_device) + " records of " + std::to_string(biggest) +
        " shots is more than 2^27 outcomes per device (lower train_records, test_records or shots)");
  if (c.hidden.size() > 8) bad("hidden: at most 8 layers");
  if (!(c.lr > 0 && c.lr < 10)) bad("lr must be in (0, 10)");
  if (c.circuit == "qgan_generator" && c.generator_report.empty())
    bad("circuit = qgan_generator needs generator_report (a qfleet-qgan train report.json)");
}

}  // namespace qfleet::qgan
