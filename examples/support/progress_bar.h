// A progress bar on stderr for a program's long runs, redrawn in place:
//   prefetch              [##########....................] 12/53 steps
// Off (nothing written) unless enabled; ProgressBar::wanted() says whether stderr is a terminal, the usual
// default for an --progress option. finish() (or the destructor) ends the line.
#pragma once

#include <string>

namespace example_support {

class ProgressBar {
 public:
  ProgressBar(std::string label, int total, bool enabled);
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  void advance();  // one more done
  void finish();

  // Whether stderr is a terminal.
  static bool wanted();

 private:
  void draw() const;

  std::string label_;
  int total_ = 0, done_ = 0;
  bool enabled_ = false, finished_ = false;
};

}  // namespace example_support
